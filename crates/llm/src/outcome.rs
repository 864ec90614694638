//! What a model result means for the step that made the request: run the tools, end the turn
//! with a given reason, or fail it. Nothing here knows how a front end reports a turn end (an
//! ACP stop reason, an exit status): each consumer maps the agent's turn end itself.

use crate::error::{ModelError, ModelErrorKind};
use crate::types::FinishReason;

/// What a model outcome means for the step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// The model is done: the turn ends `completed` unless something else is owed.
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

impl StepOutcome {
    /// The outcome of a successful stream's `Finish`.
    pub fn from_finish(reason: &FinishReason) -> StepOutcome {
        match reason {
            FinishReason::Stop | FinishReason::Other(_) => StepOutcome::Completed,
            FinishReason::ToolCalls => StepOutcome::RunTools,
            FinishReason::Length => StepOutcome::MaxTokens,
            FinishReason::ContentFilter => StepOutcome::Refusal,
        }
    }

    /// The outcome of a failed stream. A `cancelled` error aborts the turn only when the agent
    /// asked for it; one nobody requested is an error like any other.
    pub fn from_error(error: &ModelError, cancel_requested: bool) -> StepOutcome {
        if error.kind == ModelErrorKind::Cancelled && cancel_requested {
            StepOutcome::Aborted
        } else {
            StepOutcome::Error {
                code: error.kind.code(),
            }
        }
    }
}
