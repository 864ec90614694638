//! The driver: the task that runs an agent's turns for one `Running` interval.
//!
//! It opens the turn its waking verb claimed, runs it, makes the post-turn barrier, resolves
//! the turn's tickets, and then either opens the next turn (a waking message is claimable —
//! no parking) or goes idle and ends.

use std::sync::Arc;
use std::time::Instant;

use dsh_agent::{AgentEvent, AgentStatus, TurnOutcome};
use dsh_kernel::contain;
use dsh_session::{Failure, failure_code};
use tracing::Instrument;

use crate::agent::LoopAgent;
use crate::trace::elapsed_ms;
use crate::turn::{TurnRecord, run_turn};

pub(crate) async fn drive(agent: Arc<LoopAgent>) {
    loop {
        let opened = {
            let mut state = agent.state.lock();
            let claim = state.start.take();
            let opened = match (state.turn.as_ref(), claim) {
                (Some(ctl), Some(claim)) => Some((ctl.number, ctl.token.clone(), claim)),
                _ => None,
            };
            if opened.is_none() {
                set_idle(&agent, &mut state);
            }
            opened
        };
        let Some((number, token, claim)) = opened else {
            agent.drain();
            return;
        };
        // A panic in the loop itself is contained: the turn ends `error{internal}` and the
        // agent runs the next message normally.
        let mut tickets = Vec::new();
        let span = tracing::info_span!("turn", session = %agent.id, turn = number);
        span.in_scope(|| tracing::info!(messages = claim.len(), "turn started"));
        let started = Instant::now();
        let ran = contain::catch_future(run_turn(&agent, number, token, claim, &mut tickets))
            .instrument(span.clone())
            .await;
        let record = match ran {
            Ok(record) => record,
            Err(message) => {
                tracing::error!(agent = %agent.id, turn = number, "the agent loop panicked: {message}");
                close_after_panic(&agent, number, &message)
            }
        };
        span.in_scope(|| {
            tracing::info!(
                reason = record.reason.kind(),
                elapsed_ms = elapsed_ms(started),
                "turn ended"
            );
        });
        if record.recorded
            && let Err(err) = agent.store.flush(&agent.id).await
        {
            tracing::error!(agent = %agent.id, turn = number, "the post-turn barrier failed: {err}");
        }
        let outcome = if record.recorded {
            TurnOutcome::Ended {
                turn: number,
                reason: record.reason.clone(),
            }
        } else {
            let failure = if let dsh_agent::TurnEndReason::Error { failure } = &record.reason {
                failure.clone()
            } else {
                Failure::new(failure_code::SESSION, "the turn could not be recorded")
            };
            TurnOutcome::Failed { failure }
        };
        for ticket in tickets {
            ticket.resolve(outcome.clone());
        }
        // The decision to go on and the switch to idle are one step under the lock: a waking
        // message accepted a moment later finds the agent idle and starts a driver of its
        // own, instead of landing in an inbox nobody will read.
        let more = {
            let mut state = agent.state.lock();
            state.turn = None;
            if state.inbox.has_waking() {
                agent.open_turn(&mut state);
                true
            } else {
                set_idle(&agent, &mut state);
                false
            }
        };
        if !more {
            agent.drain();
            return;
        }
    }
}

/// Marks the agent idle (under its lock) and queues the status event.
fn set_idle(agent: &LoopAgent, state: &mut crate::agent::State) {
    state.status = AgentStatus::Idle;
    agent.queue_event(AgentEvent::Status {
        id: agent.id.clone(),
        status: AgentStatus::Idle,
    });
}

/// After a panic inside a turn, closes what the log left open so it stays well-formed.
fn close_after_panic(agent: &LoopAgent, number: u32, message: &str) -> TurnRecord {
    let failure = Failure::new(
        failure_code::INTERNAL,
        format!("the agent loop failed: {message}"),
    );
    let reason = dsh_agent::TurnEndReason::Error { failure };
    let repaired = crate::repair::close_open_turn(agent, number, &reason);
    TurnRecord {
        reason,
        recorded: repaired,
    }
}
