//! Seam role: definition (layer 2) — tools: the `Tool` trait, tool schemas, `ToolContext`, the
//! `ToolRegistry` spine and the `ApprovalGate`.
//!
//! Tools are registered into one registry by tool plugins and called by the agent loop through
//! the trait; presentation types let the ACP bridge render a call without knowing the tool.
//!
//! Invariants this crate will hold (agent spec §5, ACP spec §3): tool result codes are lowercase
//! snake_case; a tool registration ends with the scope that made it.
//!
//! Status: not implemented yet. A later issue fills this crate; until then it exports nothing.
#![deny(missing_docs)]
