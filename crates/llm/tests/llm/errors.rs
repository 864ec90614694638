//! T-03 and the outcome table (llm spec §1.4).

use std::time::Duration;

use dsh_llm::{FinishReason, ModelError, ModelErrorKind, TurnOutcome};

#[test]
fn errors_display_and_round_trip_with_snake_case_codes() {
    let kinds = [
        (ModelErrorKind::Auth, "auth"),
        (ModelErrorKind::RateLimited, "rate_limited"),
        (ModelErrorKind::InsufficientBalance, "insufficient_balance"),
        (ModelErrorKind::BadRequest, "bad_request"),
        (ModelErrorKind::Server, "server"),
        (ModelErrorKind::Transport, "transport"),
        (ModelErrorKind::Protocol, "protocol"),
        (ModelErrorKind::Cancelled, "cancelled"),
    ];
    for (kind, code) in kinds {
        let mut err = ModelError::new(kind, "went wrong");
        assert_eq!(err.to_string(), format!("{code}: went wrong"));
        err.status = Some(429);
        err.retry_after = Some(Duration::from_millis(1500));
        err.request_id = Some("req-1".into());
        assert_eq!(err.to_string(), format!("{code} (HTTP 429): went wrong"));
        let json = serde_json::to_string(&err).unwrap();
        assert!(json.contains(&format!("\"kind\":\"{code}\"")), "{json}");
        let back: ModelError = serde_json::from_str(&json).unwrap();
        assert_eq!(back, err);
        assert_eq!(kind.code(), code);
    }
}

#[test]
fn outcomes_map_to_turn_ends_stop_reasons_and_exit_codes() {
    let table = [
        (
            TurnOutcome::from_finish(&FinishReason::Stop),
            Some("end_turn"),
            Some(0),
        ),
        (
            TurnOutcome::from_finish(&FinishReason::ToolCalls),
            None,
            None,
        ),
        (
            TurnOutcome::from_finish(&FinishReason::Length),
            Some("max_tokens"),
            Some(3),
        ),
        (
            TurnOutcome::from_finish(&FinishReason::ContentFilter),
            Some("refusal"),
            Some(4),
        ),
        (
            TurnOutcome::from_finish(&FinishReason::Other("eos".into())),
            Some("end_turn"),
            Some(0),
        ),
        (
            TurnOutcome::from_error(&ModelError::cancelled(), true),
            Some("cancelled"),
            Some(130),
        ),
        (
            TurnOutcome::from_error(&ModelError::cancelled(), false),
            None,
            Some(1),
        ),
        (
            TurnOutcome::from_error(&ModelError::new(ModelErrorKind::Server, "x"), false),
            None,
            Some(1),
        ),
    ];
    for (outcome, stop, exit) in table {
        assert_eq!(outcome.stop_reason(), stop, "{outcome:?}");
        assert_eq!(outcome.run_exit_code(), exit, "{outcome:?}");
    }
    assert_eq!(
        TurnOutcome::from_error(&ModelError::cancelled(), false),
        TurnOutcome::Error { code: "cancelled" },
        "a cancel nobody requested is an error"
    );
}
