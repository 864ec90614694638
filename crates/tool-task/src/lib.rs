//! Seam role: consumer of dsh_agent::AgentRegistry and dsh_tools::ToolRegistry — the `task`
//! tool, with which a model hands a piece of work to a child agent (a subagent).
//!
//! The child is started through the agent seam like any agent, as the caller's child: its
//! session's header names the caller's session and the call; its owner is a scope under the
//! caller's tools, so disposing the caller disposes it first.
//!
//! Invariants:
//! - a child never has more than its parent: the same directories, approval gate (so the
//!   same mode and the same person asked) and tools, less `task` at the depth limit;
//! - when the caller's call is cancelled, each child is cancelled with cause `parent`, and
//!   the call returns only after the child's turn ended;
//! - a child's failure or cancellation is the call's result, never the caller's failure;
//! - at most [`TaskConfig::max_running`] children of one caller run at once; further calls
//!   wait their turn, and a cancel ends the wait.
//!
//! Design: docs/rfc/implemented/architecture/2026-12-07-subagents.md.
#![deny(missing_docs)]

pub mod definitions;
mod gate;
mod plugin;
mod result;
mod task;

pub use plugin::TaskPlugin;
pub use task::{TaskConfig, TaskTool};
