//! Seam role: provider of dsh_session::SessionPersistence — session logs on PostgreSQL, for a
//! team and many machines sharing one history.
//!
//! A log is stored in the format every provider stores (`dsh_session::log_format`): its
//! header record in `dsh_sessions`, its event records in `dsh_chunks`, one chunk a write.
//! dsh creates and migrates its tables itself (`schema`).
//!
//! Invariants:
//! - nothing is stored before the first write of a session with at least one event;
//! - `append` never waits for the database; a write-behind (default 200 ms) stores what was
//!   accepted, and `flush` is the barrier: one statement, one round trip, acknowledged only
//!   once committed;
//! - one writer per session across processes and machines: a lease with an expiry its holder
//!   renews and a fencing token every write checks in its own statement, so a holder whose
//!   lease was taken over has its writes refused, never interleaved;
//! - a write whose answer was lost is recognised when retried: nothing is stored twice;
//! - a cold load judges and repairs a log by the same rule as every provider: only a torn
//!   tail after the last completed turn is repaired, under the lease; damage before it is an
//!   error and nothing is changed;
//! - a schema newer than this dsh is refused, never written; no message shows a password.
//!
//! Design: docs/rfc/implemented/feature/2026-12-07-sessions-on-postgresql.md.
#![deny(missing_docs)]

mod config;
mod connect;
mod lease;
mod password;
mod plugin;
mod provider;
mod read;
mod schema;
mod store;
mod write;

pub use config::{PostgresConfig, host_name};
pub use connect::describe;
pub use plugin::PostgresPlugin;
pub use provider::PostgresPersistence;

/// The provider's name, in locations.
pub const NAME: &str = "postgres";
