//! Seam role: definition (layer 2) — tools: the [`Tool`] trait, tool schemas, [`ToolContext`],
//! the [`ToolRegistry`] spine with its standard in-memory implementation, the
//! [`ApprovalGate`] and the [`PermissionMode`]s it applies, the user's [`PermissionRules`],
//! the [`Grant`] an "always" answer gives and the [`RememberedRules`] that keep it for a
//! project, the presentation types a front end renders calls with, and [`safe_text`], the
//! filter every front end passes outside text through before showing it.
//!
//! Tool plugins register tools into the one registry; the agent loop takes an immutable
//! [`ToolSet`] snapshot per step and calls tools only through the trait. The registry is a
//! spine rather than a swappable provider, like the session store: every tool plugin
//! registers into it, so its standard implementation and the plugin that provides it live
//! here.
//!
//! # Invariants
//!
//! - A tool name matches `^[A-Za-z0-9_-]{1,64}$` and is registered at most once; a
//!   registration ends with the scope that made it.
//! - A snapshot never changes: the tools offered in a request and the ones that run its calls
//!   come from the same [`ToolSet`].
//! - Tool result codes are lowercase snake_case ([`is_result_code`]); the codes the loop itself
//!   writes are the constants of [`codes`].
//! - Presentation is a pure function of persisted data (the call and result records), so a
//!   live call and a replayed one render alike.
//! - Whether a call asks first is one function of the mode, the call's effect and the rules'
//!   verdict ([`PermissionMode::asks_under`]); an allow rule's wildcards never stand for a
//!   shell control character, so no rule written as a prefix allows a chained command.
#![deny(missing_docs)]

mod approval;
pub mod codes;
mod context;
mod grant;
mod mcp_host;
mod overlay;
mod permission;
mod plan;
mod present;
mod registry;
mod remembered;
mod rules;
pub mod safe_text;
mod tool;
pub mod words;

pub use approval::{ApprovalDecision, ApprovalGate, ApprovalRequest};
pub use codes::is_result_code;
pub use context::{ProgressSink, ToolContext};
/// The session's directories, which a tool's [`Tool::effect`] weighs paths against.
pub use dsh_fs::Roots;
pub use grant::Grant;
pub use mcp_host::McpToolHost;
pub use overlay::{HidingToolRegistry, OverlayToolRegistry};
pub use permission::{Effect, PermissionMode, UnknownMode};
pub use plan::{PLAN_META_KEY, Plan, PlanEntry, PlanStatus};
pub use present::{Location, TerminalExit, ToolCallView, ToolKindHint, ToolResultView};
pub use registry::{
    StandardToolRegistry, ToolRegistry, ToolRegistryError, ToolRegistryPlugin, ToolSet,
    valid_tool_name,
};
pub use remembered::RememberedRules;
pub use rules::{PermissionRules, Rule, RuleError, Verdict};
pub use tool::{Tool, ToolError, ToolOutput, ToolSchema};
