//! Seam role: provider of dsh_hooks::Hooks and dsh_hooks::HookSource — runs the user's hooks
//! as commands through the shell executor (dsh_shell::ShellExecutor), so they are owned,
//! swept, sandboxed and timed like every command the model runs; reads their configuration
//! from dsh's TOML and from Claude Code's `.claude/settings.json`; keeps which project files
//! the user trusted.
//!
//! Invariants:
//! - one event's matching handlers run concurrently, each in its own process group with its
//!   own timeout; the turn's cancel ends them all;
//! - a handler's stdin is the event's JSON and nothing else; its stdout and stderr are read
//!   apart, both capped;
//! - only the user's own file may run a handler outside the sandbox;
//! - a project's file runs only in the exact content the user trusted, checked again at
//!   every session start and turn;
//! - a guard from a project's `.dsh/hooks.toml` fails closed unless it says otherwise.
//!
//! Design: docs/rfc/implemented/feature/2026-12-07-hooks.md.
#![deny(missing_docs)]

pub mod config;
mod plugin;
pub mod project;
mod run;
mod source;
pub mod trust;

pub use config::{ConfigError, Group, Handler, HookConfig, Source};
pub use plugin::HooksPlugin;
pub use project::ReadFile;
pub use run::{CommandHooks, OWNER};
pub use source::ProjectHooks;
pub use trust::TrustFile;
