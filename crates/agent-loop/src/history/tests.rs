//! The projection: what the model is shown of a log, whole or read in pieces.

use dsh_llm::Message;
use serde_json::{Value, json};

use dsh_test_support::stored::{self, log};

use super::{Projection, project};

fn user(turn: u32, step: u32, text: &str) -> (&'static str, Value) {
    (
        "user/message",
        json!({"turn": turn, "step": step,
               "message": {"id": text, "text": text, "source": {"kind": "user"}}}),
    )
}

fn answer(turn: u32, step: u32, text: &str, calls: Value) -> (&'static str, Value) {
    (
        "assistant/message",
        json!({"turn": turn, "step": step, "model": "m", "finish": "stop",
               "message": {"role": "assistant", "content": text, "tool_calls": calls}}),
    )
}

fn mark(kind: &'static str, turn: u32, step: u32) -> (&'static str, Value) {
    (kind, json!({"turn": turn, "step": step}))
}

fn result(call: &str, content: &str) -> (&'static str, Value) {
    (
        "tool/result",
        json!({"turn": 1, "step": 1, "call_id": call, "name": "bash",
               "content": content, "is_error": false}),
    )
}

fn said(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m {
            Message::System { content } => format!("system:{content}"),
            Message::User { content } => format!("user:{content}"),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => format!("assistant:{content}:{}", tool_calls.len()),
            Message::Tool { call_id, content } => format!("tool:{call_id}:{content}"),
        })
        .collect()
}

#[test]
fn a_step_projects_its_prompt_answer_and_results_in_log_order() {
    let events = log(&[
        ("turn/start", json!({"turn": 1})),
        mark("step/start", 1, 1),
        user(1, 1, "list"),
        (
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"text_delta": "ok"}}),
        ),
        answer(
            1,
            1,
            "ok",
            json!([{"id": "c", "name": "bash", "arguments": "{}"}]),
        ),
        (
            "tool/call",
            json!({"turn": 1, "step": 1, "call_id": "c", "name": "bash", "arguments": "{}"}),
        ),
        result("c", "a b"),
        mark("step/end", 1, 1),
    ]);
    assert_eq!(
        said(&project(&events)),
        ["user:list", "assistant:ok:1", "tool:c:a b"]
    );
}

#[test]
fn a_prompt_whose_turn_failed_unanswered_stays_and_merges_with_the_next() {
    let events = log(&[
        mark("step/start", 1, 1),
        user(1, 1, "first"),
        mark("step/end", 1, 1),
        mark("step/start", 2, 1),
        user(2, 1, "try again"),
        answer(2, 1, "yes", json!([])),
        mark("step/end", 2, 1),
    ]);
    assert_eq!(
        said(&project(&events)),
        ["user:first\n\ntry again", "assistant:yes:0"]
    );
}

#[test]
fn the_last_instructions_record_is_kept() {
    let events = log(&[
        ("context/instructions", json!({"text": "old"})),
        mark("step/start", 1, 1),
        user(1, 1, "a"),
        ("context/instructions", json!({"text": "new"})),
    ]);
    let mut projection = Projection::default();
    projection.extend(&events);
    assert_eq!(
        projection.instructions().map(|r| r.text.as_str()),
        Some("new")
    );
    assert_eq!(said(&projection.messages()), ["user:a"]);
}

#[test]
fn an_empty_answer_is_left_out_and_an_interrupted_one_with_text_kept() {
    let events = log(&[
        mark("step/start", 1, 1),
        user(1, 1, "a"),
        answer(1, 1, "  ", json!([])),
        mark("step/end", 1, 1),
        mark("step/start", 2, 1),
        user(2, 1, "b"),
        (
            "assistant/message",
            json!({"turn": 2, "step": 1, "model": "m", "interrupted": true,
                   "message": {"role": "assistant", "content": "half", "tool_calls": []}}),
        ),
        mark("step/end", 2, 1),
    ]);
    assert_eq!(said(&project(&events)), ["user:a\n\nb", "assistant:half:0"]);
}

#[test]
fn events_already_read_or_past_a_gap_are_ignored() {
    let events = log(&[
        mark("step/start", 1, 1),
        user(1, 1, "once"),
        user(1, 1, "twice"),
    ]);
    let mut projection = Projection::default();
    projection.extend(&events[..2]);
    projection.extend(&events[..2]);
    projection.extend(&events[2..2]);
    assert_eq!(projection.next_seq(), 2);
    assert_eq!(said(&projection.messages()), ["user:once"]);
    let mut gapped = Projection::default();
    gapped.extend(&events[1..]);
    assert_eq!(gapped.next_seq(), 0);
}

#[test]
fn a_damaged_record_is_skipped_and_the_rest_projected() {
    let events = log(&[
        (
            "user/message",
            json!({"turn": 1, "step": 1, "message": "not a message"}),
        ),
        user(1, 1, "fine"),
    ]);
    assert_eq!(said(&project(&events)), ["user:fine"]);
}

/// A stored log of today's format, read in every split: reading in pieces projects what
/// reading it whole does.
#[test]
fn reading_a_log_in_pieces_projects_what_reading_it_whole_does() {
    let events = stored::events(stored::BEFORE_TYPED_RECORDS);
    let whole = project(&events);
    assert_eq!(
        said(&whole)[..4],
        [
            "user:Look at this",
            "assistant:Looking around.:1",
            "tool:call_0_2:hi\n[exit code: 3]",
            "assistant::2"
        ]
    );
    assert!(said(&whole).contains(&"assistant:partial answer:0".to_owned()));
    assert!(
        said(&whole).iter().any(|m| m.starts_with("user:now fail")),
        "the prompt of a turn that failed before an answer stays"
    );
    for split in 0..=events.len() {
        let mut projection = Projection::default();
        projection.extend(&events[..split]);
        let _ = projection.messages();
        projection.extend(&events[split..]);
        assert_eq!(projection.messages(), whole, "split at {split}");
    }
}

fn compacted(summary: &str, through: u64, kept: &[&str]) -> (&'static str, Value) {
    (
        "context/compacted",
        json!({"summary": summary, "through_seq": through, "kept": kept,
               "files_read": ["src/a.rs"], "tokens_before": 90000, "trigger": "auto"}),
    )
}

#[test]
fn a_compaction_starts_the_history_again_from_its_summary_and_kept_messages() {
    let events = log(&[
        user(1, 1, "build the thing"),
        answer(1, 1, "done part one", json!([])),
        user(2, 1, "now part two"),
        answer(2, 1, "working", json!([])),
        compacted("Goal: the thing. Part one done.", 3, &["now part two"]),
        user(3, 1, "and part three"),
        answer(3, 1, "ok", json!([])),
    ]);
    let messages = project(&events);
    let said = said(&messages);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(said[0].starts_with(&format!("user:{}", dsh_agent::record::SUMMARY_PREFIX)));
    assert!(
        said[0].contains("Goal: the thing. Part one done."),
        "{}",
        said[0]
    );
    assert!(
        said[0].ends_with("now part two\n\nand part three"),
        "{}",
        said[0]
    );
    assert_eq!(said[1], "assistant:ok:0");
    assert!(!said.iter().any(|m| m.contains("done part one")));
}

proptest::proptest! {
    /// For any log (of prompts, answers, results and compactions, read in any two pieces),
    /// the incremental projection equals the projection from scratch.
    #[test]
    fn an_incremental_projection_equals_one_from_scratch(
        kinds in proptest::collection::vec(0u8..4, 0..40),
        split in 0usize..40,
    ) {
        let records: Vec<(&'static str, Value)> = kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                let text = format!("m{i}");
                match kind {
                    0 => user(1, 1, &text),
                    1 => answer(1, 1, &text, json!([])),
                    2 => result(&text, &text),
                    _ => compacted(&text, i as u64, &[text.as_str()]),
                }
            })
            .collect();
        let events = log(&records);
        let whole = project(&events);
        let split = split.min(events.len());
        let mut projection = Projection::default();
        projection.extend(&events[..split]);
        let _ = projection.messages();
        projection.extend(&events[split..]);
        proptest::prop_assert_eq!(projection.messages(), whole);
    }
}

#[test]
fn old_tool_output_is_pruned_in_jumps_and_the_latest_never() {
    let output = "x".repeat(1000);
    let mut records = vec![user(1, 1, "go")];
    for i in 0..10 {
        records.push(answer(
            1,
            1,
            "",
            json!([{"id": format!("c{i}"), "name": "bash", "arguments": "{}"}]),
        ));
        records.push(result(&format!("c{i}"), &output));
    }
    // One more output, read later.
    records.push(result("c10", &output));
    let events = log(&records);
    let (now, later) = events.split_at(events.len() - 1);
    let mut projection = Projection::default();
    projection.extend(now);
    let pruned = |p: &Projection| {
        p.messages()
            .iter()
            .filter(|m| matches!(m, Message::Tool { content, .. } if content.starts_with("[dsh: this output")))
            .count()
    };
    // Nothing is freed while the gain is below the minimum.
    projection.prune(3000, 20_000);
    assert_eq!(pruned(&projection), 0);
    projection.prune(3000, 2000);
    assert_eq!(pruned(&projection), 7, "the newest 3000 bytes stay whole");
    let messages = projection.messages();
    let Some(Message::Tool { content, .. }) = messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Tool { .. }))
    else {
        panic!("no tool output");
    };
    assert_eq!(content, &output);
    assert!(
        said(&messages)
            .iter()
            .any(|m| m.contains("(1000 bytes) was pruned"))
    );
    // One more output would free 1000 bytes: too little to change the prefix.
    projection.extend(later);
    projection.prune(3000, 2000);
    assert_eq!(pruned(&projection), 7);
    // The latest output is never pruned, however small the budget.
    projection.prune(0, 0);
    assert_eq!(pruned(&projection), 10);
}
