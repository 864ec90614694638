//! How a turn's end is told to the client: one total function from the agent's outcome to
//! an ACP stop reason or a JSON-RPC error.

use agent_client_protocol_schema::v1::StopReason;
use dsh_agent::TurnOutcome;
use dsh_session::{Failure, TurnEndReason};
use serde_json::json;

use crate::rpc::{RpcError, code};

/// The response to a prompt whose turn ended with `outcome`. A prompt the client cancelled
/// is `cancelled` whatever its turn's own end: errors caused by stopping are not errors.
/// `auth_hint` follows the message of a failure the model server refused as unauthorised
/// (HTTP 401 or 403): the server's words alone never say where dsh took the key from.
pub(crate) fn stop_reason(
    outcome: &TurnOutcome,
    cancel_requested: bool,
    auth_hint: Option<&str>,
) -> Result<StopReason, RpcError> {
    if cancel_requested {
        return Ok(StopReason::Cancelled);
    }
    match outcome {
        TurnOutcome::Ended { reason, .. } => match reason {
            // dsh stopped a model going in circles; the renderer says so in a notice.
            TurnEndReason::Completed | TurnEndReason::RepeatedCall { .. } => {
                Ok(StopReason::EndTurn)
            }
            TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted => Ok(StopReason::Cancelled),
            TurnEndReason::MaxTokens => Ok(StopReason::MaxTokens),
            TurnEndReason::MaxSteps => Ok(StopReason::MaxTurnRequests),
            TurnEndReason::Refusal => Ok(StopReason::Refusal),
            TurnEndReason::Error { failure } => Err(turn_failed(failure, auth_hint)),
            // A kind a newer dsh wrote: saying "end_turn" would claim a success dsh cannot
            // vouch for.
            TurnEndReason::Unknown => Err(RpcError::new(
                code::INTERNAL,
                "turn failed: the turn ended with an unsupported reason",
            )),
        },
        TurnOutcome::Discarded { .. } => Ok(StopReason::Cancelled),
        TurnOutcome::Failed { failure } => Err(turn_failed(failure, auth_hint)),
    }
}

/// The failure code the model seam gives a refused key.
const AUTH: &str = "auth";

fn turn_failed(failure: &Failure, auth_hint: Option<&str>) -> RpcError {
    let mut message = format!("turn failed: {}", failure.message);
    if let Some(hint) = auth_hint.filter(|_| failure.code == AUTH) {
        message.push('\n');
        message.push_str(hint);
    }
    RpcError::new(code::INTERNAL, message).with_data(json!({ "code": failure.code }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::CancelCause;

    fn ended(reason: TurnEndReason) -> TurnOutcome {
        TurnOutcome::Ended { turn: 1, reason }
    }

    fn failure() -> Failure {
        Failure {
            code: "model_error".into(),
            message: "boom".into(),
            status: None,
            request_id: None,
        }
    }

    #[test]
    fn every_turn_end_has_its_stop_reason() {
        let cases = [
            (ended(TurnEndReason::Completed), StopReason::EndTurn),
            (
                ended(TurnEndReason::Aborted {
                    cause: CancelCause::User,
                }),
                StopReason::Cancelled,
            ),
            (ended(TurnEndReason::MaxTokens), StopReason::MaxTokens),
            (ended(TurnEndReason::MaxSteps), StopReason::MaxTurnRequests),
            (ended(TurnEndReason::Refusal), StopReason::Refusal),
            (ended(TurnEndReason::Interrupted), StopReason::Cancelled),
            (
                TurnOutcome::Discarded {
                    cause: CancelCause::User,
                },
                StopReason::Cancelled,
            ),
        ];
        for (outcome, want) in cases {
            assert_eq!(stop_reason(&outcome, false, None), Ok(want), "{outcome:?}");
        }
    }

    #[test]
    fn failures_are_errors_carrying_their_code() {
        for outcome in [
            ended(TurnEndReason::Error { failure: failure() }),
            TurnOutcome::Failed { failure: failure() },
        ] {
            let error = stop_reason(&outcome, false, None).unwrap_err();
            assert_eq!(error.code, code::INTERNAL);
            assert_eq!(error.message, "turn failed: boom");
            assert_eq!(error.data, Some(json!({"code": "model_error"})));
        }
        let refused = Failure {
            code: AUTH.into(),
            message: "Invalid API key (HTTP 401 from example.com)".into(),
            ..failure()
        };
        for hint in [None, Some("dsh sent no key")] {
            let error = stop_reason(
                &ended(TurnEndReason::Error {
                    failure: refused.clone(),
                }),
                false,
                hint,
            )
            .unwrap_err();
            let want = match hint {
                Some(hint) => format!("turn failed: {}\n{hint}", refused.message),
                None => format!("turn failed: {}", refused.message),
            };
            assert_eq!(error.message, want);
        }
        // Only a refused key gets the hint.
        let other = stop_reason(
            &TurnOutcome::Failed { failure: failure() },
            false,
            Some("dsh sent no key"),
        )
        .unwrap_err();
        assert_eq!(other.message, "turn failed: boom");
        let unknown = stop_reason(&ended(TurnEndReason::Unknown), false, None).unwrap_err();
        assert!(unknown.message.contains("unsupported reason"));
    }

    #[test]
    fn a_cancelled_prompt_is_cancelled_whatever_its_turn_became() {
        for outcome in [
            ended(TurnEndReason::Completed),
            ended(TurnEndReason::Error { failure: failure() }),
            TurnOutcome::Failed { failure: failure() },
        ] {
            assert_eq!(
                stop_reason(&outcome, true, Some("hint")),
                Ok(StopReason::Cancelled)
            );
        }
    }
}
