//! Seam role: definition (layer 1) — the shell executor seam: `ShellExecutor`, exec requests and
//! specs, task ids and opaque owner tokens.
//!
//! Every execution is a task in the executor's table. An owner is a string the executor stores
//! and never interprets; this crate names no agent, session or tool type.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
