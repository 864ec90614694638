//! Agent errors. `Clone`, because one creation failure may be reported to several waiters.

use std::sync::Arc;

use dsh_session::{PersistenceError, SessionError, SessionId};

use crate::message::MessageId;

/// What an agent verb, creation or resume refused.
#[derive(Clone, Debug, thiserror::Error)]
pub enum AgentError {
    /// A delivery verb after teardown began.
    #[error("agent \"{id}\" is disposed")]
    Disposed {
        /// The agent.
        id: SessionId,
    },
    /// Empty, whitespace-only or oversized text.
    #[error("invalid message: {reason}")]
    InvalidMessage {
        /// What is wrong.
        reason: String,
    },
    /// The id equals a pending message's.
    #[error("message \"{message_id}\" is already pending")]
    DuplicateMessage {
        /// The id.
        message_id: MessageId,
    },
    /// A bad creation or resume request, or bad options.
    #[error("invalid {field}: {reason}")]
    InvalidRequest {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// The id is live and not retiring.
    #[error("session \"{id}\" is already live")]
    AlreadyLive {
        /// The id.
        id: SessionId,
    },
    /// Creation over a stored log.
    #[error("session \"{id}\" already has a stored log; resume it instead")]
    AlreadyStored {
        /// The id.
        id: SessionId,
    },
    /// Resume of an unknown id.
    #[error("session \"{id}\" not found")]
    NotFound {
        /// The id.
        id: SessionId,
    },
    /// Resume without a persistence provider.
    #[error("cannot resume: no session persistence is configured")]
    PersistenceUnavailable,
    /// The loaded log still has an open turn or step.
    #[error("session \"{id}\" cannot be resumed: {reason}")]
    InvalidLog {
        /// The id.
        id: SessionId,
        /// What is open.
        reason: String,
    },
    /// The loop plugin or the owner scope is shutting down.
    #[error("agent loop is shutting down")]
    ShuttingDown,
    /// Reading the stored session failed (unreadable, locked, corrupt).
    #[error(transparent)]
    Persistence(Arc<PersistenceError>),
    /// Any other store failure.
    #[error(transparent)]
    Session(Arc<SessionError>),
}

impl From<SessionError> for AgentError {
    fn from(err: SessionError) -> Self {
        AgentError::Session(Arc::new(err))
    }
}

impl From<PersistenceError> for AgentError {
    fn from(err: PersistenceError) -> Self {
        AgentError::Persistence(Arc::new(err))
    }
}
