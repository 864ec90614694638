//! The errors of the session seam's in-memory half: ids, types, appends and the store.

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
}
