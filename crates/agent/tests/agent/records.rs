//! The durable records: a log written before they were typed reads through them unchanged,
//! every record re-encodes to the bytes it was read from, and crash repair's view of a reply
//! agrees with the reply's type.

use std::sync::Arc;

use dsh_agent::MessageSource;
use dsh_agent::record::{
    AssistantMessageRecord, AssistantReply, Chunk, Record, StepMark, UserMessageRecord,
};
use dsh_llm::{FinishReason, ToolCall, Usage};
use dsh_session::{
    EventType, SessionEvent, TurnEnd, TurnEndReason,
    repair::{TOOL_NOT_STARTED, interrupted_turn_closers},
};
use dsh_test_support::stored;
use serde_json::value::RawValue;

/// A log written by dsh before the records were typed (see `dsh_test_support::stored`).
fn fixture() -> Vec<Arc<SessionEvent>> {
    stored::events(stored::BEFORE_TYPED_RECORDS)
}

fn records() -> Vec<Record> {
    fixture()
        .iter()
        .map(|event| Record::decode(event).unwrap())
        .collect()
}

#[test]
fn every_event_of_a_log_from_before_the_types_decodes() {
    let records = records();
    assert_eq!(records.len(), 52);
    let others: Vec<usize> = (0..records.len())
        .filter(|&i| records[i] == Record::Other)
        .collect();
    assert_eq!(
        others,
        [43],
        "only the plugin's note is outside the vocabulary"
    );
    let kinds = |pick: fn(&Record) -> bool| records.iter().filter(|r| pick(r)).count();
    assert_eq!(kinds(|r| matches!(r, Record::TurnStart(_))), 5);
    assert_eq!(kinds(|r| matches!(r, Record::TurnEnd(_))), 5);
    assert_eq!(kinds(|r| matches!(r, Record::UserMessage(_))), 5);
    assert_eq!(kinds(|r| matches!(r, Record::ToolResult(_))), 4);
}

#[test]
fn the_records_carry_what_was_written() {
    let records = records();
    let Record::AssistantMessage(first) = &records[7] else {
        panic!("{:?}", records[7]);
    };
    assert_eq!(first.turn, 1);
    assert_eq!(first.model, "replay:fixture");
    assert_eq!(first.finish, Some(FinishReason::ToolCalls));
    assert_eq!(first.message.reasoning.as_deref(), Some("Think first."));
    assert_eq!(first.message.tool_calls.len(), 1);
    assert!(!first.interrupted);
    let Record::AssistantMessage(cut) = &records[27] else {
        panic!("{:?}", records[27]);
    };
    assert_eq!(cut.finish, Some(FinishReason::Length));
    assert_eq!(cut.usage.as_ref().map(|u| u.output_tokens), Some(1));
    let Record::AssistantMessage(partial) = &records[40] else {
        panic!("{:?}", records[40]);
    };
    assert!(partial.interrupted);
    assert_eq!(partial.finish, None);
    assert_eq!(partial.message.content, "partial answer");
    assert_eq!(
        records[3],
        Record::AssistantChunk(dsh_agent::record::AssistantChunkRecord {
            turn: 1,
            step: 1,
            chunk: Chunk::ReasoningDelta("Think ".into()),
        })
    );
    let Record::UserMessage(notice) = &records[46] else {
        panic!("{:?}", records[46]);
    };
    assert_eq!(
        notice.message.source,
        MessageSource::Plugin {
            name: "bash".into()
        }
    );
    let ends: Vec<TurnEndReason> = records
        .iter()
        .filter_map(|r| match r {
            Record::TurnEnd(TurnEnd { reason, .. }) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(matches!(ends[2], TurnEndReason::Error { ref failure } if failure.status == Some(429)));
    assert_eq!(ends[4], TurnEndReason::Interrupted);
}

#[test]
fn every_record_re_encodes_to_what_it_was_read_from() {
    for event in fixture() {
        let encoded = match Record::decode(&event).unwrap() {
            Record::TurnStart(r) => serde_json::to_string(&r),
            Record::TurnEnd(r) => serde_json::to_string(&r),
            Record::StepStart(r) | Record::StepEnd(r) => serde_json::to_string(&r),
            Record::UserMessage(r) => serde_json::to_string(&r),
            Record::AssistantChunk(r) => serde_json::to_string(&r),
            Record::AssistantMessage(r) => serde_json::to_string(&r),
            Record::ToolCall(r) => serde_json::to_string(&r),
            Record::ToolResult(r) => serde_json::to_string(&r),
            Record::Instructions(r) => serde_json::to_string(&r),
            Record::Compacted(r) => serde_json::to_string(&r),
            Record::Title(r) => serde_json::to_string(&r),
            Record::ConfigChanged(r) => serde_json::to_string(&r),
            Record::Plan(r) => serde_json::to_string(&r),
            Record::PermissionRule(r) => serde_json::to_string(&r),
            Record::Subagent(r) => serde_json::to_string(&r),
            Record::HookRan(r) => serde_json::to_string(&r),
            Record::Other => continue,
        }
        .unwrap();
        // Compared as JSON: a tool's free-form `meta` object keeps no key order.
        let value = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
        assert_eq!(
            value(&encoded),
            value(event.data.get()),
            "event {}",
            event.seq
        );
    }
}

#[test]
fn a_record_of_the_wrong_shape_is_an_error_naming_the_event() {
    let event = SessionEvent {
        seq: 9,
        kind: EventType::new(EventType::USER_MESSAGE).unwrap(),
        time: 0,
        ignorable: false,
        data: RawValue::from_string(r#"{"turn":1,"step":1,"message":"hi"}"#.into()).unwrap(),
    };
    let err = Record::decode(&event).unwrap_err();
    assert_eq!(err.seq, 9);
    assert!(
        err.to_string().starts_with("event 9 (user/message)"),
        "{err}"
    );
}

#[test]
fn crash_repair_reads_the_calls_of_a_typed_reply() {
    let reply = AssistantMessageRecord {
        turn: 2,
        step: 1,
        message: AssistantReply {
            tool_calls: vec![
                ToolCall {
                    id: "a".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                },
                ToolCall {
                    id: "b".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                },
            ],
            ..AssistantReply::default()
        },
        model: "m".into(),
        finish: Some(FinishReason::ToolCalls),
        usage: Some(Usage::default()),
        context: None,
        interrupted: false,
    };
    let user = UserMessageRecord {
        turn: 2,
        step: 1,
        message: dsh_agent::UserMessage::user("go"),
    };
    let log = stored::log(&[
        ("turn/start", r#"{"turn":2}"#.to_owned()),
        (
            "step/start",
            serde_json::to_string(&StepMark { turn: 2, step: 1 }).unwrap(),
        ),
        ("user/message", serde_json::to_string(&user).unwrap()),
        ("assistant/message", serde_json::to_string(&reply).unwrap()),
    ]);
    let closers = interrupted_turn_closers(&log);
    let closed: Vec<(String, String)> = closers
        .iter()
        .filter_map(|e| match Record::decode(e).unwrap() {
            Record::ToolResult(r) => Some((r.call_id, r.error_code.unwrap_or_default())),
            _ => None,
        })
        .collect();
    assert_eq!(
        closed,
        [
            ("a".to_owned(), TOOL_NOT_STARTED.to_owned()),
            ("b".to_owned(), TOOL_NOT_STARTED.to_owned())
        ]
    );
}

#[test]
fn a_compaction_record_reads_back_and_opens_with_its_summary_and_kept_messages() {
    use dsh_agent::record::{CompactTrigger, CompactedRecord, SUMMARY_PREFIX};
    let record = CompactedRecord {
        turn: 3,
        step: 2,
        summary: "Goal: fix the build.\n".into(),
        through_seq: 41,
        kept: vec!["and the tests".into()],
        files_read: vec!["src/lib.rs".into()],
        files_modified: vec![],
        tokens_before: 90_000,
        tokens_after: 2_000,
        trigger: CompactTrigger::Overflow,
        usage: None,
    };
    let text = serde_json::to_string(&record).unwrap();
    assert!(text.contains("\"trigger\":\"overflow\""), "{text}");
    let back: CompactedRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(back, record);
    assert_eq!(
        record.opening(),
        format!("{SUMMARY_PREFIX}\n\nGoal: fix the build.\n\nand the tests")
    );
}

#[test]
fn a_subagent_record_reads_as_it_was_written() {
    use dsh_agent::record::{SubagentPhase, SubagentRecord};
    let child = dsh_session::SessionId::parse("01a24cf7-2273-7407-bb3c-8c9b64784fc1").unwrap();
    for phase in [
        SubagentPhase::Started {
            description: "look".into(),
        },
        SubagentPhase::Finished {
            outcome: "completed".into(),
            failed: false,
            summary: Some("found it".into()),
        },
    ] {
        let record = SubagentRecord {
            turn: 2,
            step: 1,
            call_id: "call_0".into(),
            child: child.clone(),
            phase,
        };
        let event = dsh_session::SessionEvent {
            seq: 9,
            kind: dsh_session::EventType::new(dsh_agent::record::AGENT_SUBAGENT).unwrap(),
            time: 0,
            ignorable: true,
            data: serde_json::value::to_raw_value(&record).unwrap(),
        };
        assert_eq!(Record::decode(&event).unwrap(), Record::Subagent(record));
    }
}
