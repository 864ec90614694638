//! The errors of the session seam's in-memory half: ids, types, appends and the store.

use dsh_kernel::BoxError;

use crate::id::SessionId;

/// Why a session operation was refused. Every refusal leaves the log and the store unchanged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The event type breaks the naming grammar.
    #[error(
        "invalid event type {kind:?}: use 3 to 64 bytes of [a-z0-9_.-] segments joined by '/', at least two segments (e.g. \"turn/start\")"
    )]
    InvalidEventType {
        /// The refused name.
        kind: String,
    },
    /// The event type is not registered in the vocabulary.
    #[error(
        "event type {kind:?} is not registered; register it in the vocabulary before appending it"
    )]
    UnknownEventType {
        /// The unregistered name.
        kind: String,
    },
    /// The type is already registered with the other class.
    #[error("event type {kind:?} is already registered with a different class")]
    VocabularyConflict {
        /// The conflicting name.
        kind: String,
    },
    /// The payload could not be serialized.
    #[error("payload of {kind} cannot be serialized: {reason}")]
    InvalidData {
        /// The event type.
        kind: String,
        /// What serde_json said.
        reason: String,
    },
    /// The encoded event exceeds the limit.
    #[error("event {kind} encodes to {bytes} bytes, over the limit of {limit}")]
    EventTooLarge {
        /// The event type.
        kind: String,
        /// Its encoded size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A header field is invalid.
    #[error("invalid session header field `{field}`: {reason}")]
    InvalidHeader {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// An append was made from inside an `on_append` callback.
    #[error(
        "session {id}: append from inside an on_append observer; observers that need to append must spawn a task"
    )]
    ReentrantAppend {
        /// The session appended to.
        id: SessionId,
    },
    /// The session was removed from its store (or never entered and then dropped).
    #[error("session {id} is detached and accepts no more events")]
    Detached {
        /// The session.
        id: SessionId,
    },
    /// Another live session has this id.
    #[error("a live session with id {id} already exists")]
    AlreadyExists {
        /// The id.
        id: SessionId,
    },
    /// This session object is already live in a store.
    #[error("session {id} is already entered in the store")]
    AlreadyEntered {
        /// The session.
        id: SessionId,
    },
    /// No live session has this id (or the handle is not the live one).
    #[error("session {id} is not live in this store")]
    NotLive {
        /// The id.
        id: SessionId,
    },
    /// The session was announced already, or its announcement is running.
    #[error("session {id} is already announced")]
    AlreadyAnnounced {
        /// The session.
        id: SessionId,
    },
    /// An observer refused the new session; the announcement was rolled back.
    #[error("session {id} was vetoed by observer {observer}: {cause}")]
    Vetoed {
        /// The session.
        id: SessionId,
        /// The observer's name.
        observer: String,
        /// Its error (or panic message).
        #[source]
        cause: BoxError,
    },
    /// An observer's flush failed, so durability is not confirmed.
    #[error("flush of session {id} failed in observer {observer}: {cause}")]
    FlushFailed {
        /// The session.
        id: SessionId,
        /// The observer's name.
        observer: String,
        /// Its error (or panic message).
        #[source]
        cause: BoxError,
    },
    /// An observer failed while the session was being disposed (the removal still happened).
    #[error("observer {observer} failed while session {id} was disposed: {cause}")]
    DisposeFailed {
        /// The session.
        id: SessionId,
        /// The observer's name.
        observer: String,
        /// Its error (or panic message).
        #[source]
        cause: BoxError,
    },
    /// A fork or restore seed breaks the log rules at `index`.
    #[error("invalid seed at event {index}: {reason}")]
    InvalidSeed {
        /// Index of the offending event.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A barrier on a session that is live but not announced: no observer holds its events
    /// yet, so nothing could be made durable.
    #[error("session {id} is not announced yet: nothing it holds can be made durable")]
    NotAnnounced {
        /// The session.
        id: SessionId,
    },
    /// The scope given to `subscribe` is already being disposed.
    #[error("cannot subscribe: {0}")]
    Scope(#[from] dsh_kernel::KernelError),
}
