//! Seam role: provider of dsh_mcp::McpConnector — MCP servers over stdio (a child process in
//! its own process group) and over streamable HTTP, on the official Rust SDK, `rmcp`.
//!
//! Invariants:
//! - connecting is bounded by the spec's startup timeout; a child that did not finish the
//!   initialization in time is killed with its whole process group;
//! - a call is bounded by the spec's tool timeout; cancelling it drops the request, which
//!   sends MCP's `notifications/cancelled` to the server;
//! - shutting a server down (or dropping it) closes the connection and kills a child's
//!   process group, so nothing it started outlives it;
//! - the server's stderr goes to dsh's log (`tracing`), never to dsh's stdout, a line at a
//!   time with each line's head kept (8 KiB) and the rest counted;
//! - with the shell's `ProcessContainment` present, a stdio server is enrolled: what it
//!   starts, even in a session of its own, ends when it is shut down, when dsh exits, and
//!   (by the shell's watchdog) after a SIGKILL of dsh;
//! - content the model cannot read yet (images, audio, resources) is described in one line.
#![deny(missing_docs)]

mod connect;
mod content;
mod plugin;
mod server;
mod stderr;

pub use connect::RmcpConnector;
pub use plugin::RmcpPlugin;
