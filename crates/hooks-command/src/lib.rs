//! Seam role: provider of dsh_hooks::Hooks — runs the user's hooks as commands through the
//! shell executor (dsh_shell::ShellExecutor), so they are owned, swept, sandboxed and timed
//! like every command the model runs; reads their configuration from dsh's TOML and from
//! Claude Code's `.claude/settings.json`.
//!
//! Invariants:
//! - one event's matching handlers run concurrently, each in its own process group with its
//!   own timeout; the turn's cancel ends them all;
//! - a handler's stdin is the event's JSON and nothing else; its stdout and stderr are read
//!   apart, both capped;
//! - only the user's own file may run a handler outside the sandbox;
//! - a guard from a project's `.dsh/hooks.toml` fails closed unless it says otherwise.
//!
//! Design: docs/rfc/proposed/feature/2026-12-07-hooks.md.
#![deny(missing_docs)]

pub mod config;
mod plugin;
mod run;

pub use config::{ConfigError, Group, Handler, HookConfig, Source};
pub use plugin::HooksPlugin;
pub use run::{CommandHooks, OWNER};
