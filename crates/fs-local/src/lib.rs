//! Seam role: provider of `dsh_fs::FileAccess` — text files on the local disk.
//!
//! Invariants this crate holds:
//! - A write is atomic: the new text goes to a temporary file in the same directory, is
//!   synced, and is renamed over the old one, then the directory is synced. A failure at any
//!   point leaves the old file whole and no temporary file behind.
//! - A write keeps what the writer did not mean to change: the file's permission bits, its
//!   line endings (a file whose every line ends in CRLF is read as LF and written back as
//!   CRLF) and a symlink (the file it points to is written, the link stays). The final newline
//!   is the writer's: readers see it, so text given without one is written without one.
//! - A read refuses what is not text (a NUL byte in the first 8 KiB, or not UTF-8) and what is
//!   over the read cap (default 2 MiB), each with an error that says so.
//! - Every call runs on tokio's blocking pool: a slow disk never stalls the runtime's workers.
//!
//! Design and limits: docs/rfc/implemented/architecture/2026-12-04-file-seam.md.
#![deny(missing_docs)]

mod config;
mod endings;
mod files;
mod ops;
mod plugin;
mod read;
mod write;

pub use config::LocalFilesConfig;
pub use files::LocalFiles;
pub use ops::{RealOps, WriteOps};
pub use plugin::FsLocalPlugin;
