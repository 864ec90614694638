//! Seam role: consumer of dsh_mcp::McpConnector and dsh_tools::ToolRegistry — each configured
//! MCP server's tools as the agent's tools.
//!
//! A server's tool `t` is offered to the model as `<server>__<t>` ([`tool_names`]: the
//! characters and the 64-character limit OpenAI-compatible servers accept, collisions
//! resolved the same way every time). Its input schema is passed through when the model API
//! can take it ([`checked_schema`]); a tool whose schema it would refuse is left out with a
//! warning naming it. A call returns the server's text; a server that is gone is started
//! again once, at the next call.
//!
//! Invariants:
//! - a tool asks for permission like a command, unless the server marks it read-only
//!   (`readOnlyHint`), when it runs like a read;
//! - servers start in parallel, each within its startup timeout; one that fails is reported
//!   with its reason and the others work without it; the configuration's servers start in
//!   the background, and `McpToolHost::ready` is where a front end waits for them;
//! - a server found gone is started again once, at the next call; never a third time;
//! - when a server's tool list changes (or it was restarted), its tools are registered again
//!   from the new list, and the call after which that happened returns only once they are.
#![deny(missing_docs)]

mod adapter;
mod connection;
mod names;
mod plugin;
mod schema;

pub use names::tool_names;
pub use plugin::{McpToolsPlugin, start_servers};
pub use schema::checked_schema;
