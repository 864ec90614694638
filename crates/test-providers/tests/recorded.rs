//! A recorded session log becomes a script
//! whose entries reproduce the recorded assistant messages; interrupted prefixes are skipped;
//! an error turn becomes an error entry.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_llm::{FinishReason, ModelErrorKind};
use dsh_llm_replay::{Ending, ItemKind};
use dsh_test_providers::recorded::script_from_log;
use dsh_test_support::stored::{self, log};
use serde_json::json;

#[test]
fn a_session_log_becomes_a_script() {
    let events = log(&[
        ("turn/start", json!({"turn": 1})),
        ("step/start", json!({"turn": 1, "step": 1})),
        (
            "user/message",
            json!({"turn": 1, "step": 1, "message": {"id": "m1", "text": "list files", "source": {"kind": "user"}}}),
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1, "model": "m", "interrupted": true, "message": {"content": "I'll", "tool_calls": []}}),
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1, "model": "m", "message": {"content": "Looking.", "reasoning": "think", "tool_calls": [{"id": "c1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}]}}),
        ),
        (
            "tool/result",
            json!({"turn": 1, "step": 1, "call_id": "c1", "name": "bash", "content": "a b", "is_error": false}),
        ),
        ("step/end", json!({"turn": 1, "step": 1})),
        ("step/start", json!({"turn": 1, "step": 2})),
        (
            "assistant/message",
            json!({"turn": 1, "step": 2, "model": "m", "message": {"content": "Two files.", "tool_calls": []}}),
        ),
        ("step/end", json!({"turn": 1, "step": 2})),
        (
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "max_tokens"}}),
        ),
        ("turn/start", json!({"turn": 2})),
        ("step/start", json!({"turn": 2, "step": 1})),
        ("step/end", json!({"turn": 2, "step": 1})),
        (
            "turn/end",
            json!({"turn": 2, "reason": {"kind": "error", "failure": {"code": "rate_limited", "message": "slow down", "status": 429}}}),
        ),
    ]);
    let script = script_from_log("recorded", &events);
    assert_eq!(script.prompt.as_deref(), Some("list files"));
    assert_eq!(script.entries.len(), 3, "the interrupted prefix is skipped");
    let first = &script.entries[0];
    assert_eq!(
        first.stream[0].kind,
        ItemKind::Reasoning(vec!["think".into()])
    );
    assert_eq!(
        first.stream[1].kind,
        ItemKind::Text(vec!["Looking.".into()])
    );
    assert_eq!(
        first.stream[2].kind,
        ItemKind::ToolCall {
            name: "bash".into(),
            arguments: "{\"command\":\"ls\"}".into(),
            id: Some("c1".into())
        }
    );
    assert_eq!(first.ending, Ending::Finish(FinishReason::ToolCalls));
    assert_eq!(
        script.entries[1].ending,
        Ending::Finish(FinishReason::Length),
        "the turn ended max_tokens"
    );
    match &script.entries[2].ending {
        Ending::Error(e) => {
            assert_eq!(e.kind, ModelErrorKind::RateLimited);
            assert_eq!(e.message, "slow down");
            assert_eq!(e.status, Some(429));
        }
        other => panic!("{other:?}"),
    }
}

/// A log written by the built binary (the dsh-agent fixture) converts through the same record
/// types the loop wrote it with: its first prompt is the script's prompt, and each finished
/// answer an entry.
#[test]
fn a_stored_log_of_the_binary_becomes_a_script() {
    let events = stored::events(stored::BEFORE_TYPED_RECORDS);
    let script = script_from_log("stored", &events);
    assert_eq!(script.prompt.as_deref(), Some("Look at this"));
    let endings: Vec<&Ending> = script.entries.iter().map(|e| &e.ending).collect();
    assert_eq!(endings.len(), 6, "{endings:?}");
    assert_eq!(endings[3], &Ending::Finish(FinishReason::Length));
    assert!(matches!(endings[4], Ending::Error(e) if e.kind == ModelErrorKind::RateLimited));
    assert_eq!(
        script.entries[0].usage.as_ref().map(|u| u.input_tokens),
        Some(120),
        "usage is carried over"
    );
}
