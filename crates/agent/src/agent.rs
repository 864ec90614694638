//! The agent trait: delivery verbs, cancellation and status.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::config::{ConfigChange, ConfigOrigin, SessionConfig};
use crate::error::AgentError;
use crate::message::{MessageId, UserMessage};
use crate::options::AgentOptions;
use crate::ticket::TurnTicket;
use dsh_session::{CancelCause, Session, SessionId};

/// Whether a turn is running. Disposal is not a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// No turn is open and no waking message is pending.
    Idle,
    /// A turn is open, or about to open for a pending waking message.
    Running,
}

/// A live agent. Every method may be called from any thread, any listener and any tool body.
pub trait Agent: Send + Sync + 'static {
    /// The agent's id: always the session's id.
    fn id(&self) -> &SessionId;

    /// The session the agent writes.
    fn session(&self) -> &Session;

    /// The options it runs with.
    fn options(&self) -> &AgentOptions;

    /// Idle or running.
    fn status(&self) -> AgentStatus;

    /// Queues a follow-up: it opens a turn of its own (one follow-up per turn).
    fn send(&self, message: UserMessage) -> Result<TurnTicket, AgentError>;

    /// Queues steering: it enters the running turn at its next step, or opens one.
    fn steer(&self, message: UserMessage) -> Result<TurnTicket, AgentError>;

    /// Queues an injected message: it rides along with the next step that happens anyway and
    /// never opens a turn by itself.
    fn inject(&self, message: UserMessage) -> Result<TurnTicket, AgentError>;

    /// Queues a compaction the user asked for, under the caller's `id` (its ticket's, and the
    /// `request` of its `context/compacting` notices, by which a front end knows its turn): like a follow-up, it opens a turn of its own,
    /// in which the model (with no tools) writes a handoff summary that is recorded as
    /// `context/compacted`; the turn then ends. It is cancelled like any turn. The turn ends
    /// `error` with code `compaction` when there is nothing to compact or no summary came back.
    fn compact(&self, id: MessageId) -> Result<TurnTicket, AgentError>;

    /// The settings the session's log recorded (a loaded session's as it was left); `None`
    /// fields run as configured.
    fn config(&self) -> SessionConfig;

    /// Changes one setting from the next model call on and records it as `config/changed`;
    /// answers the settings after it. Changing a setting to the value it has records nothing.
    /// The model and reasoning level are the agent's to apply; the permission mode is
    /// recorded for the front end, whose approval gate applies it.
    fn configure(
        &self,
        change: ConfigChange,
        origin: ConfigOrigin,
    ) -> Result<SessionConfig, AgentError>;

    /// Cancels what is pending and the open turn; `false` when there was nothing to cancel.
    fn cancel(&self, cause: CancelCause) -> bool;

    /// Resolves once the agent is quiescent: idle, no driver, every tool task settled.
    fn when_idle(&self) -> BoxFuture<'static, ()>;
}
