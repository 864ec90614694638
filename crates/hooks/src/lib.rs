//! Seam role: definition (layer 1) — hooks: the user's own scripts run at the agent's seams
//! (a session starting, a prompt submitted, a tool about to run or just run, a turn about to
//! stop, a compaction, a question waiting), in Claude Code's format so that existing hook
//! scripts run unchanged.
//!
//! This crate holds the format and the trait, nothing that runs a process:
//! - [`HookEvent`]: the events, named as Claude Code names them;
//! - [`HookInput`]: what a handler reads on stdin, built in Claude Code's JSON shape, with
//!   dsh's tool names and arguments mapped to Claude Code's where it has the same tool
//!   ([`claude_tool_name`], [`claude_tool_input`]);
//! - [`HandlerRun`] → [`HandlerAnswer`]: a handler's exit, stdout and stderr read as its
//!   answer, failing closed when the handler said so ([`OnError::Deny`]);
//! - [`HookVerdict`]: the answers of one event's handlers folded into one;
//! - [`Hooks`]: the trait a provider implements and the agent loop and front ends call;
//! - [`HookSource`]: the hooks of a session by its directory — the user's own and the
//!   project's files the user trusted — and the trust of those files.
//!
//! Invariants:
//! - a handler's answer never depends on anything but its exit, stdout and stderr, and the
//!   handler's own `on_error`;
//! - folding is order-independent for decisions (deny beats ask beats allow, a block beats
//!   everything) and keeps configuration order for texts and the first rewritten input;
//! - [`Hooks::wants`] is synchronous and cheap: a session without hooks pays a lookup.
//!
//! Design: docs/rfc/implemented/feature/2026-12-07-hooks.md.
#![deny(missing_docs)]

mod answer;
mod event;
mod hooks;
mod input;
mod matcher;
mod source;
mod tools;
mod verdict;

pub use answer::{HandlerAnswer, HandlerRun, OnError, PermissionDecision};
pub use event::{HookEvent, UnknownEvent};
pub use hooks::{Hooks, NoHooks};
pub use input::{Common, EventFields, HookInput, PermissionModeName};
pub use matcher::{BadMatcher, Matcher};
pub use source::{FixedHooks, HookSet, HookSource, ProjectFile, TrustError};
pub use tools::{claude_tool_input, claude_tool_name};
pub use verdict::{HookRun, HookVerdict};
