//! The session writer of one turn: every event of the turn is appended through it, and it
//! remembers what the session refused so the turn can end with that failure.

use std::sync::Arc;

use dsh_agent::TurnEndReason;
use dsh_session::{EventType, Failure, SessionError, SessionEvent, failure_code};
use serde::Serialize;

use crate::agent::LoopAgent;
use crate::repeats::Repeats;

/// Appends on behalf of one turn and remembers what the session refused.
pub(crate) struct Writer<'a> {
    pub(crate) agent: &'a LoopAgent,
    /// The session was detached: nothing more is written.
    pub(crate) dead: bool,
    /// The first refused append of another kind.
    pub(crate) refused: Option<Failure>,
    /// The turn's calls so far, against a model going in circles.
    pub(crate) repeats: Repeats,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(agent: &'a LoopAgent) -> Writer<'a> {
        Writer {
            agent,
            dead: false,
            refused: None,
            repeats: Repeats::default(),
        }
    }

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
                    self.refused = Some(Failure::new(failure_code::SESSION, err.to_string()));
                }
                None
            }
        }
    }

    /// How the turn ends because of the session: with its first refusal, or the detach.
    pub(crate) fn session_end(&self) -> TurnEndReason {
        TurnEndReason::Error {
            failure: self
                .refused
                .clone()
                .unwrap_or_else(|| Failure::new(failure_code::SESSION, "the session was detached")),
        }
    }
}
