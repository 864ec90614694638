//! Crash repair's closers.

use dsh_session::repair::{
    NOT_STARTED_TEXT, OUTCOME_UNKNOWN_TEXT, TOOL_NOT_STARTED, TOOL_OUTCOME_UNKNOWN,
    interrupted_turn_closers,
};
use dsh_session::{SessionEvent, ToolResultRecord};
use dsh_test_support::stored::log;

fn shape(closers: &[SessionEvent]) -> Vec<(u64, String, String)> {
    closers
        .iter()
        .map(|e| (e.seq, e.kind.to_string(), e.data.get().to_owned()))
        .collect()
}

const TURN: (&str, &str) = ("turn/start", r#"{"turn":1}"#);
const STEP: (&str, &str) = ("step/start", r#"{"turn":1,"step":1}"#);
const STEP_END: (&str, &str) = ("step/end", r#"{"turn":1,"step":1}"#);
const END: (&str, &str) = ("turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#);
const TWO_CALLS: (&str, &str) = (
    "assistant/message",
    r#"{"turn":1,"step":1,"message":{"content":"","tool_calls":[{"id":"a","name":"bash","arguments":"{}"},{"id":"b","name":"read","arguments":"{}"}]},"model":"m"}"#,
);

#[test]
fn balanced_and_empty_logs_need_no_closers() {
    assert!(interrupted_turn_closers(&[]).is_empty());
    assert!(interrupted_turn_closers(&log(&[TURN, STEP, STEP_END, END])).is_empty());
}

#[test]
fn an_open_turn_is_closed_as_interrupted() {
    let closers = interrupted_turn_closers(&log(&[TURN]));
    assert_eq!(
        shape(&closers),
        [(
            1,
            "turn/end".into(),
            r#"{"turn":1,"reason":{"kind":"interrupted"}}"#.into()
        )]
    );
    assert_eq!(closers[0].time, 1000, "closers reuse the last event's time");
}

#[test]
fn an_open_step_is_closed_before_the_turn() {
    let closers = interrupted_turn_closers(&log(&[TURN, STEP]));
    let kinds: Vec<String> = shape(&closers).into_iter().map(|c| c.1).collect();
    assert_eq!(kinds, ["step/end", "turn/end"]);
    assert_eq!(closers[0].data.get(), r#"{"turn":1,"step":1}"#);
    assert_eq!(closers[1].seq, 3);
}

#[test]
fn pending_calls_get_synthetic_results_in_registration_order() {
    let events = log(&[
        TURN,
        STEP,
        TWO_CALLS,
        (
            "tool/call",
            r#"{"turn":1,"step":1,"call_id":"a","name":"bash","arguments":"{}"}"#,
        ),
    ]);
    let closers = interrupted_turn_closers(&events);
    let kinds: Vec<String> = shape(&closers).into_iter().map(|c| c.1).collect();
    assert_eq!(
        kinds,
        ["tool/result", "tool/result", "step/end", "turn/end"]
    );
    let a: ToolResultRecord = serde_json::from_str(closers[0].data.get()).unwrap();
    assert_eq!((a.call_id.as_str(), a.name.as_str()), ("a", "bash"));
    assert!(a.is_error);
    assert_eq!(a.error_code.as_deref(), Some(TOOL_OUTCOME_UNKNOWN));
    assert_eq!(a.content, OUTCOME_UNKNOWN_TEXT);
    assert_eq!(a.call_seq, Some(3));
    let b: ToolResultRecord = serde_json::from_str(closers[1].data.get()).unwrap();
    assert_eq!(b.call_id, "b");
    assert_eq!(b.error_code.as_deref(), Some(TOOL_NOT_STARTED));
    assert_eq!(b.content, NOT_STARTED_TEXT);
    assert_eq!(b.call_seq, None);
    assert_eq!(
        closers.iter().map(|c| c.seq).collect::<Vec<_>>(),
        [4, 5, 6, 7]
    );
}

#[test]
fn answered_calls_and_calls_of_closed_steps_need_nothing() {
    let events = log(&[
        TURN,
        STEP,
        TWO_CALLS,
        (
            "tool/result",
            r#"{"turn":1,"step":1,"call_id":"a","name":"bash","content":"x","is_error":false}"#,
        ),
        (
            "tool/result",
            r#"{"turn":1,"step":1,"call_id":"b","name":"read","content":"y","is_error":false}"#,
        ),
    ]);
    let kinds: Vec<String> = shape(&interrupted_turn_closers(&events))
        .into_iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(kinds, ["step/end", "turn/end"]);

    let closed_step = log(&[TURN, STEP, TWO_CALLS, STEP_END]);
    let kinds: Vec<String> = shape(&interrupted_turn_closers(&closed_step))
        .into_iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(kinds, ["turn/end"]);
}

#[test]
fn closers_are_deterministic() {
    let events = log(&[TURN, STEP, TWO_CALLS]);
    let first: Vec<Vec<u8>> = interrupted_turn_closers(&events)
        .iter()
        .map(SessionEvent::encode)
        .collect();
    let second: Vec<Vec<u8>> = interrupted_turn_closers(&events)
        .iter()
        .map(SessionEvent::encode)
        .collect();
    assert_eq!(first, second);
}
