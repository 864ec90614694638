//! Seam role: definition (layer 1) — the session: ids, the header, the event envelope and its
//! codec, the event vocabulary, the live `Session` and `SessionStore` with their observers,
//! the `SessionPersistence` trait, and crash repair's closers.
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
//! - [`Session::append`] is synchronous and totally ordered: a refused append leaves the log
//!   unchanged and uses no seq, and observers see every published event once, in seq order;
//! - a live id is unique in a [`SessionStore`]: [`SessionStore::enter`] is the authority, and a
//!   vetoed announcement rolls back only its own entry;
//! - observer panics never reach the appender; `on_disposed` is delivered once per announced
//!   session;
//! - [`repair::interrupted_turn_closers`] is pure, so an interrupted repair recomputes the same
//!   closers byte for byte.
//!
//! [`PersistenceBridge`] is the one observer that feeds a `SessionPersistence` provider. The
//! design is recorded in docs/rfc/implemented/architecture/2026-11-30-session-persistence.md.
#![deny(missing_docs)]

mod bridge;
mod ephemeral;
mod error;
mod event;
pub mod failure_code;
mod finite;
mod header;
mod id;
pub mod log_format;
mod observer;
mod payload;
mod persistence;
mod plugin;
mod project;
pub mod repair;
mod session;
mod store;
mod title;
mod vocabulary;

pub use bridge::{PersistenceBridge, PersistenceFailed};
pub use ephemeral::Ephemeral;
pub use error::SessionError;
pub use event::{EnvelopeError, EventType, MAX_EVENT_BYTES, SessionEvent, valid_type};
pub use header::{SESSION_FORMAT_VERSION, SessionHeader, normalize_cwd};
pub use id::{MAX_ID_BYTES, SessionId, SessionIdError, SessionIdProblem};
pub use observer::{DisposeReason, Interest, SessionObserver};
pub use payload::{
    CancelCause, Failure, StepMark, ToolCallRecord, ToolResultRecord, TurnEnd, TurnEndReason,
    TurnStart,
};
pub use persistence::{
    CloseIntent, ListQuery, LoadedSession, Origin, PersistenceError, RepairReport, SessionListing,
    SessionLocation, SessionPersistence, SessionSummary, SkippedLog, StoreRevision, check_writable,
};
pub use plugin::SessionStorePlugin;
pub use project::project_of;
pub use session::{Restored, Session, SessionState};
pub use store::{SessionSpec, SessionStore};
pub use title::{MAX_TITLE_CHARS, SESSION_TITLE, TitleRecord, TitleSource, title_of};
pub use vocabulary::{EventClass, EventVocabulary};
