//! The agent's canonical trace decodes into the exported payload structs.

use dsh_session::{
    CancelCause, Failure, StepMark, ToolCallRecord, ToolResultRecord, TurnEnd, TurnEndReason,
    TurnStart,
};

#[test]
fn canonical_trace_decodes() {
    let start: TurnStart = serde_json::from_str(r#"{"turn":1}"#).unwrap();
    assert_eq!(start.turn, 1);
    let step: StepMark = serde_json::from_str(r#"{"turn":1,"step":2}"#).unwrap();
    assert_eq!((step.turn, step.step), (1, 2));
    let call: ToolCallRecord = serde_json::from_str(
        r#"{"turn":1,"step":1,"call_id":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}"#,
    )
    .unwrap();
    assert_eq!(call.arguments, r#"{"command":"ls"}"#);
    let result: ToolResultRecord = serde_json::from_str(
        r#"{"turn":1,"step":1,"call_id":"c1","name":"bash","content":"ok","is_error":false,"meta":{"exit":0},"call_seq":4}"#,
    )
    .unwrap();
    assert_eq!(result.call_seq, Some(4));
    assert_eq!(result.error_code, None);

    let reasons = [
        (r#"{"kind":"completed"}"#, TurnEndReason::Completed),
        (r#"{"kind":"max_tokens"}"#, TurnEndReason::MaxTokens),
        (r#"{"kind":"max_steps"}"#, TurnEndReason::MaxSteps),
        (r#"{"kind":"refusal"}"#, TurnEndReason::Refusal),
        (r#"{"kind":"interrupted"}"#, TurnEndReason::Interrupted),
        (
            r#"{"kind":"aborted","cause":"user"}"#,
            TurnEndReason::Aborted {
                cause: CancelCause::User,
            },
        ),
        (
            r#"{"kind":"error","failure":{"code":"rate_limited","message":"slow down","status":429}}"#,
            TurnEndReason::Error {
                failure: Failure {
                    code: "rate_limited".into(),
                    message: "slow down".into(),
                    status: Some(429),
                    request_id: None,
                },
            },
        ),
        (r#"{"kind":"from_the_future"}"#, TurnEndReason::Unknown),
    ];
    for (json, reason) in reasons {
        let end: TurnEnd =
            serde_json::from_str(&format!(r#"{{"turn":3,"reason":{json}}}"#)).unwrap();
        assert_eq!(end.reason, reason, "{json}");
        if reason != TurnEndReason::Unknown {
            assert_eq!(serde_json::to_string(&end.reason).unwrap(), json);
        }
    }
}
