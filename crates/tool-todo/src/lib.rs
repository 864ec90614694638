//! Seam role: consumer of dsh_tools::ToolRegistry — the `todo` tool, with which the model keeps
//! the session's plan.
//!
//! The model sends the whole list each time (content and status of every step); the tool
//! checks it and hands it to the agent loop in its output, and the loop records it as the
//! session's `plan/updated` event, which `dsh run` and an editor show as it changes.
//!
//! Invariants:
//! - a call replaces the whole plan; there is no partial update to get wrong;
//! - at most one step is in progress; a list that breaks that, or that is empty of text,
//!   too long or malformed, is refused with a message that says what to send instead, and
//!   the plan stays as it was;
//! - the tool changes nothing outside the session's log: it never asks for permission.
#![deny(missing_docs)]

mod plugin;
mod todo;

pub use plugin::TodoPlugin;
pub use todo::{MAX_ENTRIES, MAX_ENTRY_CHARS, TodoTool, check};
