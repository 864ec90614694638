//! Closing a turn the loop itself left open (a panic inside the driver): the same closers
//! crash repair computes, with the turn ended by the loop's own reason.

use dsh_agent::TurnEndReason;
use dsh_session::{EventType, TurnEnd};

use crate::agent::LoopAgent;

/// Appends whatever closes turn `number`; false when even that was refused.
pub(crate) fn close_open_turn(agent: &LoopAgent, number: u32, reason: &TurnEndReason) -> bool {
    let closers = dsh_session::repair::interrupted_turn_closers(&agent.session.events());
    let mut ok = true;
    for closer in closers {
        let appended = if closer.kind.as_str() == EventType::TURN_END {
            agent.session.append(
                &closer.kind,
                &TurnEnd {
                    turn: number,
                    reason: reason.clone(),
                },
            )
        } else {
            agent.session.append(&closer.kind, &*closer.data)
        };
        if let Err(err) = appended {
            tracing::error!(agent = %agent.id, "closing the failed turn: {err}");
            ok = false;
        }
    }
    ok
}
