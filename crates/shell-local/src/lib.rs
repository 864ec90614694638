//! Seam role: provider of `dsh_shell::ShellExecutor` — local processes in their own process
//! groups, output caps and spill files.
//!
//! Invariants this crate will hold (shell spec SL-*): background tasks are owned by the executor
//! and die with it; output is one merged byte stream per task, never decoded inside the seam.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
