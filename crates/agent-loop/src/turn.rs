//! One turn: `turn/start`, its steps, `turn/end`. Every `turn/start` gets exactly one
//! `turn/end` and every `step/start` one `step/end`, on every path; the only exception is a
//! session that refuses appends because it was detached, which gets nothing more.

use std::sync::Arc;

use dsh_agent::{CancelCause, TicketSender, TurnEndReason};
use dsh_kernel::CancellationToken;
use dsh_session::{EventType, Failure, SessionError, SessionEvent, StepMark, TurnEnd, TurnStart};
use serde::Serialize;

use crate::agent::LoopAgent;
use crate::inbox::Pending;
use crate::step::{StepEnd, run_step};

/// A failure with a code and a message, nothing else.
pub(crate) fn failure(code: &str, message: impl Into<String>) -> Failure {
    Failure {
        code: code.to_owned(),
        message: message.into(),
        status: None,
        request_id: None,
    }
}

/// Appends on behalf of one turn and remembers what the session refused.
pub(crate) struct Writer<'a> {
    pub(crate) agent: &'a LoopAgent,
    /// The session was detached: nothing more is written.
    pub(crate) dead: bool,
    /// The first refused append of another kind.
    pub(crate) refused: Option<Failure>,
}

impl Writer<'_> {
    pub(crate) fn append<T: Serialize + ?Sized>(
        &mut self,
        kind: &EventType,
        data: &T,
    ) -> Option<Arc<SessionEvent>> {
        if self.dead {
            return None;
        }
        match self.agent.session.append(kind, data) {
            Ok(event) => Some(event),
            Err(err) => {
                tracing::error!(agent = %self.agent.id, event = kind.as_str(), "the session refused an event: {err}");
                if matches!(err, SessionError::Detached { .. }) {
                    self.dead = true;
                } else if self.refused.is_none() {
                    self.refused = Some(failure("session", err.to_string()));
                }
                None
            }
        }
    }
}

/// How a turn went, for its tickets.
pub(crate) struct TurnRecord {
    pub(crate) reason: TurnEndReason,
    /// False when not even `turn/start` could be written.
    pub(crate) recorded: bool,
}

/// Runs turn `number` whose first step claimed `claim`. The tickets of every message the
/// turn claims go into `tickets`, which outlives the turn so that even a turn that fails
/// inside the loop resolves them.
pub(crate) async fn run_turn(
    agent: &LoopAgent,
    number: u32,
    token: CancellationToken,
    claim: Vec<Pending>,
    tickets: &mut Vec<TicketSender>,
) -> TurnRecord {
    let kinds = &agent.shared.kinds;
    let mut writer = Writer {
        agent,
        dead: false,
        refused: None,
    };
    if writer
        .append(&kinds.turn_start, &TurnStart { turn: number })
        .is_none()
    {
        tickets.extend(claim.into_iter().map(|p| p.ticket));
        let reason = TurnEndReason::Error {
            failure: writer
                .refused
                .unwrap_or_else(|| failure("session", "the session was detached")),
        };
        return TurnRecord {
            reason,
            recorded: false,
        };
    }
    let mut claim = claim;
    let mut step = 0u32;
    let reason = loop {
        step += 1;
        let mark = StepMark { turn: number, step };
        // The step's opening events go in with no cancellation point between them.
        writer.append(&kinds.step_start, &mark);
        for pending in claim.drain(..) {
            writer.append(
                &kinds.user_message,
                &serde_json::json!({"turn": number, "step": step, "message": pending.message}),
            );
            tickets.push(pending.ticket);
        }
        let end = if writer.dead || writer.refused.is_some() {
            StepEnd::End(session_failure(&writer))
        } else {
            run_step(&mut writer, number, step, &token).await
        };
        writer.append(&kinds.step_end, &mark);
        let end = match (end, &writer.refused) {
            (StepEnd::End(reason), _) => Some(reason),
            (StepEnd::Continue { .. }, Some(_)) => Some(session_failure(&writer)),
            (StepEnd::Continue { tools_ran }, None) => {
                next_step(agent, number, step, tools_ran, &mut claim)
            }
        };
        if let Some(reason) = end {
            break reason;
        }
    };
    // From its `turn/end` on the turn is no longer open: a cancel seen by an observer of that
    // event has nothing of this turn left to stop.
    {
        let mut state = agent.state.lock();
        if state.turn.as_ref().is_some_and(|t| t.number == number) {
            state.turn = None;
        }
    }
    writer.append(
        &kinds.turn_end,
        &TurnEnd {
            turn: number,
            reason: reason.clone(),
        },
    );
    TurnRecord {
        reason,
        recorded: true,
    }
}

fn session_failure(writer: &Writer<'_>) -> TurnEndReason {
    TurnEndReason::Error {
        failure: writer
            .refused
            .clone()
            .unwrap_or_else(|| failure("session", "the session was detached")),
    }
}

/// The stop decision and the next step's claim, as one step under the agent's lock: a
/// message arriving concurrently lands in this turn's next step or in the next turn, never
/// in neither and never in both. `None` means another step runs with `claim`.
fn next_step(
    agent: &LoopAgent,
    number: u32,
    step: u32,
    tools_ran: bool,
    claim: &mut Vec<Pending>,
) -> Option<TurnEndReason> {
    let mut state = agent.state.lock();
    if let Some(cause) = state
        .turn
        .as_ref()
        .filter(|t| t.number == number)
        .and_then(|t| t.cause)
    {
        return Some(TurnEndReason::Aborted { cause });
    }
    let owed = tools_ran || state.inbox.has_steering();
    if !owed {
        return Some(TurnEndReason::Completed);
    }
    if step >= agent.options.max_steps.get() {
        return Some(TurnEndReason::MaxSteps);
    }
    *claim = state.inbox.claim_boundary();
    None
}

/// The reason for a turn that saw its token fire.
pub(crate) fn aborted(agent: &LoopAgent, number: u32) -> TurnEndReason {
    TurnEndReason::Aborted {
        cause: agent.cancel_cause(number).unwrap_or(CancelCause::User),
    }
}
