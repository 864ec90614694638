//! Seam role: consumer — the file tools `read`, `edit`, `write`, `grep` and `glob`, registered
//! in the tool registry. They read and write through the caller's `dsh_fs::FileAccess` (an
//! editor's buffers when the front end attached one, else the local disk) and never name a
//! provider.
//!
//! Invariants this crate holds:
//! - An `edit` or an overwriting `write` needs a `read` of the file by the same session, and
//!   refuses when the file changed since: the model must see what it changes. The versions
//!   read are kept per session and forgotten with the agent.
//! - Several edits in one call apply to the text in memory one after another and are written
//!   once: all or none.
//! - A refused or failed call changes nothing on disk or in the editor.
//! - `grep` and `glob` walk with ripgrep's crates, honour `.gitignore`, skip binary files and
//!   cap what they return with a note saying how to narrow; they read the disk, not editor
//!   buffers. A search stops within one buffer of a cancel or of its time budget (30 s),
//!   reporting what it found by then, and `grep` refuses a pattern whose compiled regex
//!   passes 10 MiB.
//! - Presentation is a pure function of the persisted call and result (`meta` carries the
//!   changed region), so a replayed session shows the same cards.
//!
//! Design: docs/rfc/implemented/architecture/2026-12-04-file-seam.md.
#![deny(missing_docs)]

mod args;
mod config;
mod edit;
mod errors;
mod find;
mod glob;
mod grep;
mod ledger;
mod listing;
mod plugin;
mod present;
mod read;
mod region;
mod stop;
mod target;
mod write;

pub use config::ToolFsConfig;
pub use plugin::FsToolsPlugin;
