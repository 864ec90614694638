//! Seam role: definition (layer 1) — MCP servers: a [`ServerSpec`] says how to start or reach
//! one, an [`McpConnector`] (the provider) starts or connects it, and the [`McpServer`] it
//! hands back lists its tools, calls them, says when its tool list changes and shuts down.
//! Errors are typed ([`McpError`]) and always name the server.
//!
//! The provider (`dsh-mcp-rmcp`, on the official Rust SDK) speaks the protocol; the consumer
//! (`dsh-tool-mcp`) turns a server's tools into the agent's tools. Neither names the other.
//!
//! # Invariants
//!
//! - [`McpConnector::connect`] answers within the spec's startup timeout, with a server that
//!   finished the protocol's initialization or with an error; a server that did not start
//!   leaves no process behind.
//! - A call ends when the server answers, when its cancellation token fires (the server is
//!   sent MCP's cancellation) or when the spec's tool timeout passes, whichever is first.
//! - After [`McpServer::shutdown`] (and when the server is dropped) nothing of it runs: a stdio
//!   server's process group is ended.
//! - A server that exits fails its calls in flight with [`McpError::Gone`].
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use dsh_mcp::{ServerSpec, Transport};
//!
//! let spec = ServerSpec::stdio("files", "mcp-server-files", ["--root", "/work"]);
//! assert_eq!(spec.name, "files");
//! assert_eq!(spec.startup_timeout, Duration::from_secs(10));
//! assert!(matches!(spec.transport, Transport::Stdio { .. }));
//! ```
#![deny(missing_docs)]

mod error;
mod server;
mod spec;
mod tool;

pub use error::McpError;
pub use server::{McpConnector, McpServer};
pub use spec::{Sandbox, ServerSpec, Transport};
pub use tokio_util::sync::CancellationToken;
pub use tool::{CallOutcome, McpTool, ToolAnnotations};
