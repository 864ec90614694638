//! Runtime events an agent publishes on the kernel's event bus.

use dsh_session::{CancelCause, SessionId};

use crate::agent::AgentStatus;

/// What happened to an agent. Front ends render turns from session events, not from these.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// `agent/created`: once per published agent, after publication.
    Created {
        /// The agent.
        id: SessionId,
    },
    /// `agent/status`: every real change between idle and running.
    Status {
        /// The agent.
        id: SessionId,
        /// The new status.
        status: AgentStatus,
    },
    /// `agent/cancel-requested`: each effective cancel, before anything is cleared.
    CancelRequested {
        /// The agent.
        id: SessionId,
        /// Who asked.
        cause: CancelCause,
        /// The open turn, if any.
        turn: Option<u32>,
        /// How many pending messages were dropped.
        discarded: u32,
    },
    /// `agent/disposed`: exactly once per `agent/created`, when the agent is unregistered.
    Disposed {
        /// The agent.
        id: SessionId,
    },
}

impl AgentEvent {
    /// The event's name, e.g. `agent/status`.
    pub fn name(&self) -> &'static str {
        match self {
            AgentEvent::Created { .. } => "agent/created",
            AgentEvent::Status { .. } => "agent/status",
            AgentEvent::CancelRequested { .. } => "agent/cancel-requested",
            AgentEvent::Disposed { .. } => "agent/disposed",
        }
    }

    /// The agent the event is about.
    pub fn id(&self) -> &SessionId {
        match self {
            AgentEvent::Created { id }
            | AgentEvent::Status { id, .. }
            | AgentEvent::CancelRequested { id, .. }
            | AgentEvent::Disposed { id } => id,
        }
    }
}
