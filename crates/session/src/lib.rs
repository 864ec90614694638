//! Seam role: definition (layer 1) — the session: ids, the header, the event envelope and its
//! codec, the event vocabulary, the core payloads and crash repair's closers.
//!
//! A session is an immutable header plus an append-only log of events, and that log is dsh's
//! one durable state: the agent derives model history from it, the ACP bridge renders and
//! replays it, persistence stores it. The session id is also the agent id and the shell owner
//! token.
//!
//! Invariants held here:
//! - a [`SessionId`] from outside is validated once, at parse or deserialize time;
//! - every event record, in every provider, is written by [`SessionEvent::encode_into`] and read
//!   by [`SessionEvent::decode`], which refuses missing, unknown and duplicate keys;
//! - event type names follow one grammar ([`EventType::new`]) and the vocabulary only grows;
//! - [`repair::interrupted_turn_closers`] is pure, so an interrupted repair recomputes the same
//!   closers byte for byte.
//!
//! Status: the live `Session`, the `SessionStore` with its observers, and the
//! `SessionPersistence` trait are the next increment of the issue "Session store and durable
//! JSONL persistence"; they do not exist yet. The design is recorded in
//! docs/rfc/proposed/architecture/2026-11-30-session-persistence.md.
#![deny(missing_docs)]

mod error;
mod event;
mod header;
mod id;
mod payload;
pub mod repair;
mod vocabulary;

pub use error::SessionError;
pub use event::{EnvelopeError, EventType, MAX_EVENT_BYTES, SessionEvent, valid_type};
pub use header::{SESSION_FORMAT_VERSION, SessionHeader, normalize_cwd};
pub use id::{MAX_ID_BYTES, SessionId, SessionIdError, SessionIdProblem};
pub use payload::{
    CancelCause, Failure, StepMark, ToolCallRecord, ToolResultRecord, TurnEnd, TurnEndReason,
    TurnStart,
};
pub use vocabulary::{EventClass, EventVocabulary};
