//! The one table from a model outcome to what the agent does with the turn (llm spec §1.4):
//! the turn end, the ACP `stopReason` and the `dsh run` exit status.

use crate::error::{ModelError, ModelErrorKind};
use crate::types::FinishReason;

/// What a model outcome means for the turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The turn ends `completed`.
    Completed,
    /// The requested tools run and the loop continues.
    RunTools,
    /// The turn ends `max_tokens`; truncated tool calls are dropped, never executed.
    MaxTokens,
    /// The turn ends `refusal`.
    Refusal,
    /// The turn ends `aborted` with the cause the agent recorded.
    Aborted,
    /// The turn ends `error`, with the error's kind as the failure code.
    Error {
        /// The snake_case code.
        code: &'static str,
    },
}

impl TurnOutcome {
    /// The outcome of a successful stream's `Finish`.
    pub fn from_finish(reason: &FinishReason) -> TurnOutcome {
        match reason {
            FinishReason::Stop | FinishReason::Other(_) => TurnOutcome::Completed,
            FinishReason::ToolCalls => TurnOutcome::RunTools,
            FinishReason::Length => TurnOutcome::MaxTokens,
            FinishReason::ContentFilter => TurnOutcome::Refusal,
        }
    }

    /// The outcome of a failed stream. A `cancelled` error aborts the turn only when the agent
    /// asked for it; one nobody requested is an error like any other.
    pub fn from_error(error: &ModelError, cancel_requested: bool) -> TurnOutcome {
        if error.kind == ModelErrorKind::Cancelled && cancel_requested {
            TurnOutcome::Aborted
        } else {
            TurnOutcome::Error {
                code: error.kind.code(),
            }
        }
    }

    /// The ACP `stopReason`, or `None` for the JSON-RPC error `-32603` (and for `RunTools`,
    /// which ends no turn).
    pub fn stop_reason(&self) -> Option<&'static str> {
        match self {
            TurnOutcome::Completed => Some("end_turn"),
            TurnOutcome::MaxTokens => Some("max_tokens"),
            TurnOutcome::Refusal => Some("refusal"),
            TurnOutcome::Aborted => Some("cancelled"),
            TurnOutcome::RunTools | TurnOutcome::Error { .. } => None,
        }
    }

    /// The exit status of `dsh run` for a turn ended this way (`None` for `RunTools`).
    pub fn run_exit_code(&self) -> Option<u8> {
        match self {
            TurnOutcome::Completed => Some(0),
            TurnOutcome::MaxTokens => Some(3),
            TurnOutcome::Refusal => Some(4),
            TurnOutcome::Aborted => Some(130),
            TurnOutcome::Error { .. } => Some(1),
            TurnOutcome::RunTools => None,
        }
    }
}
