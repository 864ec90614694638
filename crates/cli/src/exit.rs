//! Exit statuses: one total function from how a turn ended, and the failures that end dsh
//! before a turn starts.

use dsh_agent::{TurnEndReason, TurnOutcome};
use dsh_tools::safe_text::SafeText;

use crate::json_lines::Line;
use crate::render::View;

/// A usage error: a missing or malformed prompt.
pub const USAGE: u8 = 2;
/// A configuration error: environment, key, replay script.
pub const CONFIG: u8 = 6;
/// Ctrl-C.
pub const INTERRUPTED: u8 = 130;
/// The model went in circles (the same call again after it was told) and dsh stopped it.
pub const REPEATED_CALL: u8 = 7;
/// SIGTERM.
pub const TERMINATED: u8 = 143;
/// SIGHUP.
pub const HANGUP: u8 = 129;
/// Stdout was closed under dsh (`| head`).
pub const STDOUT_CLOSED: u8 = 141;

/// Why dsh stopped before (or instead of) a turn, and with which status.
#[derive(Debug)]
pub struct Failure {
    pub status: u8,
    /// A stable code for `--json`'s `error` line.
    pub code: &'static str,
    pub message: String,
}

impl Failure {
    pub fn config(message: impl Into<String>) -> Failure {
        Failure {
            status: CONFIG,
            code: "config",
            message: message.into(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            status: USAGE,
            code: "usage",
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> Failure {
        Failure {
            status: 1,
            code: "internal",
            message: message.into(),
        }
    }
}

/// The status of a turn's outcome: 0 completed, 3 out of tokens, 4 refused, 5 out of steps,
/// 7 stopped going in circles, 130 cancelled, 1 for a failure and for any end this dsh does
/// not know.
pub fn for_outcome(outcome: &TurnOutcome) -> u8 {
    match outcome {
        TurnOutcome::Ended { reason, .. } => match reason {
            TurnEndReason::Completed => 0,
            TurnEndReason::MaxTokens => 3,
            TurnEndReason::Refusal => 4,
            TurnEndReason::MaxSteps => 5,
            TurnEndReason::RepeatedCall { .. } => REPEATED_CALL,
            TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted => INTERRUPTED,
            // A kind a newer dsh wrote: success is not claimed for what this dsh cannot read.
            TurnEndReason::Error { .. } | TurnEndReason::Unknown => 1,
        },
        TurnOutcome::Discarded { .. } => INTERRUPTED,
        TurnOutcome::Failed { .. } => 1,
    }
}

/// The exit status of a command's outcome: 0, or its failure reported as text on stderr.
pub fn status(outcome: Result<(), Failure>) -> u8 {
    match outcome {
        Ok(()) => 0,
        Err(failure) => report(
            &failure,
            View::Human {
                color: false,
                split: true,
            },
        ),
    }
}

/// Prints a failure that ended dsh before a turn; returns its status.
pub fn report(failure: &Failure, view: View) -> u8 {
    if view == View::Json {
        let line = Line::Error {
            code: failure.code,
            message: &failure.message,
        };
        let _ = crate::output::write(line.text().as_bytes());
    }
    eprintln!("error: {}", SafeText::plain(&failure.message));
    failure.status
}

#[cfg(test)]
mod tests {
    use dsh_agent::{CancelCause, Failure as TurnFailure};

    use super::*;

    fn ended(reason: TurnEndReason) -> TurnOutcome {
        TurnOutcome::Ended { turn: 1, reason }
    }

    #[test]
    fn every_turn_end_has_its_exit_status() {
        let failure = TurnFailure::new("server", "boom");
        let cases = [
            (ended(TurnEndReason::Completed), 0),
            (ended(TurnEndReason::MaxTokens), 3),
            (ended(TurnEndReason::Refusal), 4),
            (ended(TurnEndReason::MaxSteps), 5),
            (
                ended(TurnEndReason::RepeatedCall {
                    tool: "read".into(),
                }),
                7,
            ),
            (
                ended(TurnEndReason::Aborted {
                    cause: CancelCause::User,
                }),
                130,
            ),
            (ended(TurnEndReason::Interrupted), 130),
            (
                ended(TurnEndReason::Error {
                    failure: failure.clone(),
                }),
                1,
            ),
            (ended(TurnEndReason::Unknown), 1),
            (
                TurnOutcome::Discarded {
                    cause: CancelCause::User,
                },
                130,
            ),
            (TurnOutcome::Failed { failure }, 1),
        ];
        for (outcome, status) in cases {
            assert_eq!(for_outcome(&outcome), status, "{outcome:?}");
        }
    }
}
