//! Seam role: provider of dsh_session::SessionPersistence — durable JSONL files, the embedded
//! default.
//!
//! One file per session at `<root>/<project>/<id>.jsonl`: a header line, then one event per
//! line in the envelope encoding of `dsh-session`.
//!
//! Invariants:
//! - nothing touches disk before the first write of a session with at least one event;
//! - `append` never waits for disk; a write-behind timer (default 200 ms) batches events, and
//!   `flush` is the barrier: one write and one `fdatasync`;
//! - the first write publishes a synced temp file with a no-overwrite hard link, so a crash
//!   leaves no file or a complete header plus first batch;
//! - a failed write is truncated back to the last durable length and reported at the next
//!   flush, never dropped; a failed rollback poisons the session;
//! - one writer per session across processes (an advisory lock), released by the OS even on
//!   SIGKILL;
//! - a cold load repairs only a torn tail after the last completed turn; damage before it is
//!   an error naming file and line, and the file is left untouched.
#![deny(missing_docs)]

mod config;
mod fsops;
mod index;
mod layout;
mod list;
mod load;
mod open;
mod plugin;
mod provider;
mod resume;

pub use config::JsonlConfig;
#[cfg(feature = "fault-injection")]
pub use fsops::{FsOps, RealFs};
pub use plugin::{JsonlPlugin, StillOpen};
pub use provider::JsonlPersistence;
