//! The `SessionPersistence` seam: how a provider stores session logs. Providers implement
//! it; the persistence bridge and the CLI use it through `Arc<dyn SessionPersistence>`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

use crate::event::SessionEvent;
use crate::header::SessionHeader;
use crate::id::SessionId;
use crate::vocabulary::EventVocabulary;

/// An opaque version of a stored log: equal iff the stored log is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreRevision(pub String);

/// How `create` opens a session for writing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A new session: nothing may be stored for the id yet.
    New,
    /// Continue a stored log that was loaded at `revision` and holds `next_seq` events.
    Resume {
        /// The seq the next appended event must have.
        next_seq: u64,
        /// The revision observed at load.
        revision: StoreRevision,
    },
}

/// What `close` does with buffered events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseIntent {
    /// Make everything durable, then close.
    Flush,
    /// Drop a never-materialized session's buffer; behaves as `Flush` once materialized.
    Abandon,
}

/// Where a stored log lives, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionLocation {
    /// The provider's name (`jsonl`).
    pub provider: &'static str,
    /// A human-readable location.
    pub display: String,
    /// The file, for file-based providers.
    pub path: Option<PathBuf>,
}

impl fmt::Display for SessionLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

/// What a load dropped and added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Records of the torn tail that were dropped.
    pub dropped_records: u64,
    /// Their bytes.
    pub dropped_bytes: u64,
    /// The 1-based line (record) of the first dropped one.
    pub first_dropped: Option<u64>,
    /// How many closers were appended.
    pub closers: u64,
}

/// A loaded session log.
#[derive(Debug)]
pub struct LoadedSession {
    /// The stored header.
    pub header: SessionHeader,
    /// The repaired events.
    pub events: Vec<Arc<SessionEvent>>,
    /// What the load repaired.
    pub repair: RepairReport,
    /// The stored log's revision after the load.
    pub revision: StoreRevision,
    /// Where it lives.
    pub location: SessionLocation,
}

/// A listing filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only sessions of this working directory.
    pub cwd: Option<String>,
    /// Only sessions of this project (see [`crate::project_of`]): a session started in any
    /// clone of the same repository, at the same path within it.
    pub project: Option<String>,
}

/// One listed session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSummary {
    /// Its header.
    pub header: SessionHeader,
    /// Where it lives.
    pub location: SessionLocation,
    /// Epoch ms of the last durable write of activity: a `session/title` alone (a rename)
    /// does not move it.
    pub updated_at: i64,
    /// Its title (the last `session/title`), when it has one.
    pub title: Option<String>,
}

/// A log the listing could not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedLog {
    /// Where it lives.
    pub location: SessionLocation,
    /// Why it was skipped.
    pub reason: String,
}

/// The result of `list`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionListing {
    /// Readable sessions, newest `updated_at` first, then by id.
    pub sessions: Vec<SessionSummary>,
    /// Logs whose header could not be read, or duplicate ids.
    pub skipped: Vec<SkippedLog>,
}

/// Why a persistence operation failed. Every message names the session and, where there is
/// one, the location.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistenceError {
    /// No stored log for the id.
    #[error("session {id}: no stored log")]
    NotFound {
        /// The id.
        id: SessionId,
    },
    /// The id is open here or a stored log exists.
    #[error("session {id}: the log exists at {location}; load or resume it instead")]
    AlreadyExists {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
    },
    /// The id is not open for writing.
    #[error("session {id} is not open for writing")]
    NotOpen {
        /// The id.
        id: SessionId,
    },
    /// The id is open in this provider.
    #[error("session {id} is open in this process")]
    Live {
        /// The id.
        id: SessionId,
    },
    /// Another process holds the session.
    #[error("session {id} is open in another dsh process ({location}); close it there first")]
    Locked {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
    },
    /// The stored log does not match what the caller loaded.
    #[error("session {id} ({location}): {reason}")]
    Conflict {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
        /// What differs.
        reason: String,
    },
    /// A batch does not continue the stored seq.
    #[error(
        "session {id}: event {index} of the batch has seq {got}, expected {expected}; nothing was accepted"
    )]
    SeqMismatch {
        /// The id.
        id: SessionId,
        /// The seq expected there.
        expected: u64,
        /// The seq found.
        got: u64,
        /// Index in the batch.
        index: usize,
    },
    /// The header is not acceptable.
    #[error("session {id}: invalid header: {reason}")]
    InvalidHeader {
        /// The id.
        id: SessionId,
        /// What is wrong.
        reason: String,
    },
    /// The stored log is damaged before its last completed turn (or in its header).
    #[error("session log {location} is damaged{} ({reason}); refusing to load — the file was not modified", line.map(|l| format!(" at line {l}")).unwrap_or_default())]
    Corrupt {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
        /// The 1-based line (record).
        line: Option<u64>,
        /// What is wrong.
        reason: String,
    },
    /// The log's format version is not this dsh's.
    #[error("session {id} ({location}): format version {found} is not supported (this dsh reads version {supported}){}", if *found > *supported { "; it was written by a newer dsh" } else { "; this dsh has no upgrade path for it" })]
    UnsupportedVersion {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
        /// The stored version.
        found: u32,
        /// The version this dsh reads.
        supported: u32,
    },
    /// A required event type this dsh does not know.
    #[error(
        "session {id} ({location}): event {seq} has type \"{kind}\", which this dsh does not know and which is not marked ignorable; it was probably written by a newer dsh — refusing to load (nothing was changed)"
    )]
    UnsupportedEvent {
        /// The id.
        id: SessionId,
        /// Where.
        location: SessionLocation,
        /// The event's seq.
        seq: u64,
        /// Its type.
        kind: String,
    },
    /// The stored header names another id.
    #[error("the log at {location} holds session {found}, not {requested}")]
    IdMismatch {
        /// The id asked for.
        requested: SessionId,
        /// The id stored.
        found: SessionId,
        /// Where.
        location: SessionLocation,
    },
    /// Two stored logs claim the id.
    #[error("session {id} is stored twice: {}", locations.iter().map(|l| l.display.as_str()).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        /// The id.
        id: SessionId,
        /// Both locations.
        locations: Vec<SessionLocation>,
    },
    /// The storage failed.
    #[error("{}{location}: {op} failed: {source}", id.as_ref().map(|i| format!("session {i}: ")).unwrap_or_default())]
    Io {
        /// The id, when one is concerned.
        id: Option<SessionId>,
        /// Where.
        location: String,
        /// The operation.
        op: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A provider's background task ended without finishing its work: it panicked, or the
    /// runtime shutting down cancelled it.
    #[error("{}{op} did not finish: its task {}", id.as_ref().map(|i| format!("session {i}: ")).unwrap_or_default(), if *panicked { "panicked" } else { "was cancelled" })]
    TaskFailed {
        /// The id, when one is concerned.
        id: Option<SessionId>,
        /// The operation.
        op: &'static str,
        /// Whether it panicked (else it was cancelled).
        panicked: bool,
    },
    /// A write failed and could not be rolled back; the session accepts nothing more.
    #[error("session {id} is poisoned: {cause}")]
    Poisoned {
        /// The id.
        id: SessionId,
        /// The failure that poisoned it.
        cause: String,
    },
    /// A listing asked for a directory that is not an absolute path.
    #[error("invalid listing query: {source}")]
    InvalidQuery {
        /// Why the directory was refused.
        #[source]
        source: crate::SessionError,
    },
    /// The provider's configuration is invalid.
    #[error("invalid persistence configuration: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// The provider was shut down.
    #[error("the session store was shut down")]
    Closed,
    /// Shutdown could not close some sessions cleanly.
    #[error("shutdown failed for {} session(s): {}", failures.len(), failures.iter().map(|(id, e)| format!("{id}: {e}")).collect::<Vec<_>>().join("; "))]
    Shutdown {
        /// Each failure.
        failures: Vec<(SessionId, PersistenceError)>,
    },
}

/// Refuses a header no provider opens for writing: another format version, or a `cwd` that
/// is not absolute and normalized.
pub fn check_writable(header: &SessionHeader) -> Result<(), PersistenceError> {
    let normal = crate::normalize_cwd(&header.cwd).ok();
    if header.version != crate::SESSION_FORMAT_VERSION || normal.as_deref() != Some(&header.cwd) {
        return Err(PersistenceError::InvalidHeader {
            id: header.id.clone(),
            reason: "the header must be of the current version with an absolute, normalized cwd"
                .into(),
        });
    }
    Ok(())
}

/// A durable store of session logs. Object safe; returned futures are `Send`.
#[async_trait]
pub trait SessionPersistence: Send + Sync + 'static {
    /// The provider's name.
    fn name(&self) -> &'static str;
    /// Opens a session for writing; writes nothing.
    async fn create(&self, header: &SessionHeader, origin: Origin) -> Result<(), PersistenceError>;
    /// Accepts a contiguous batch into the buffer; does not wait for disk I/O.
    async fn append(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError>;
    /// The barrier: `Ok` means every accepted event survives process death and power loss.
    /// Cancel-safe: a caller may stop awaiting it (a cancelled turn does), and nothing
    /// accepted may be lost or left unaccounted for because of that.
    async fn flush(&self, id: &SessionId) -> Result<(), PersistenceError>;
    /// Flushes (or abandons) and releases the session.
    async fn close(&self, id: &SessionId, intent: CloseIntent) -> Result<(), PersistenceError>;
    /// Cold read with torn-tail repair.
    async fn load(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError>;
    /// `load` without side effects.
    async fn inspect(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError>;
    /// The stored header, without locking, repairing or writing.
    async fn header(&self, id: &SessionId) -> Result<Option<SessionHeader>, PersistenceError>;
    /// Materialized sessions, headers only.
    async fn list(&self, query: &ListQuery) -> Result<SessionListing, PersistenceError>;
    /// Where a session is or would be stored.
    async fn locate(&self, id: &SessionId) -> Result<Option<SessionLocation>, PersistenceError>;
    /// Removes a stored log durably.
    async fn delete(&self, id: &SessionId) -> Result<(), PersistenceError>;
    /// Closes every open session; afterwards every method returns `Closed`.
    async fn shutdown(&self) -> Result<(), PersistenceError>;
}
