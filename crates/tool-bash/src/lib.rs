//! Seam role: consumer of `dsh_shell::ShellExecutor` — the `bash`, `bash_output` and
//! `bash_kill` tools.
//!
//! Invariants this crate holds:
//! - The owner of every task it starts is the calling agent's id; `bash_output` and
//!   `bash_kill` reach a task only when `owner_of` equals the caller's id (a task without
//!   owner is open to all), and unknown, released, malformed and foreign ids get one and the
//!   same answer.
//! - It keeps no task table, owner map, cursor or cached outcome: the executor owns tasks, so
//!   reloading this plugin changes no ownership and never makes a task reachable by another
//!   session.
//! - A command's own outcome (any exit code, signal or timeout) is a normal result; errors are
//!   bad arguments and infrastructure, each with a stable code.
//! - Background tasks end with their owning agent (a per-task disposer on the agent's scope,
//!   holding the executor, not this plugin); a completion notice reaches only the owning live
//!   agent, without waking it.
//! - Bytes become text only here, through `dsh_shell::text::decode_chunk`.
//!
//! Design: docs/rfc/implemented/architecture/2026-11-30-shell-executor-ownership.md.
#![deny(missing_docs)]

mod args;
mod bash;
mod config;
mod errors;
mod live;
mod notice;
mod output_tool;
mod plugin;
mod present;
mod render;
mod schema;
mod shared;

pub use config::ToolBashConfig;
pub use plugin::BashToolsPlugin;

/// The codes of the tools' error results.
pub mod codes {
    pub use crate::errors::{
        BAD_WORKDIR, CANCELLED, INVALID_ARGUMENTS, SHELL_UNAVAILABLE, SPAWN_FAILED, TASK_NOT_FOUND,
        TOO_MANY_TASKS,
    };
}

/// The completion notice text for a finished task (what the owning agent receives).
pub use notice::text as notice_text;
