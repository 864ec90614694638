//! Error kinds and their codes, and what a model result means for a step.

use std::time::Duration;

use dsh_llm::{FinishReason, ModelError, ModelErrorKind, StepOutcome};

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
fn model_results_map_to_step_outcomes() {
    let table = [
        (
            StepOutcome::from_finish(&FinishReason::Stop),
            StepOutcome::Completed,
        ),
        (
            StepOutcome::from_finish(&FinishReason::ToolCalls),
            StepOutcome::RunTools,
        ),
        (
            StepOutcome::from_finish(&FinishReason::Length),
            StepOutcome::MaxTokens,
        ),
        (
            StepOutcome::from_finish(&FinishReason::ContentFilter),
            StepOutcome::Refusal,
        ),
        (
            StepOutcome::from_finish(&FinishReason::Other("eos".into())),
            StepOutcome::Completed,
        ),
        (
            StepOutcome::from_error(&ModelError::cancelled(), true),
            StepOutcome::Aborted,
        ),
        (
            StepOutcome::from_error(&ModelError::new(ModelErrorKind::Server, "x"), false),
            StepOutcome::Error { code: "server" },
        ),
    ];
    for (outcome, expected) in table {
        assert_eq!(outcome, expected);
    }
    assert_eq!(
        StepOutcome::from_error(&ModelError::cancelled(), false),
        StepOutcome::Error { code: "cancelled" },
        "a cancel nobody requested is an error"
    );
}
