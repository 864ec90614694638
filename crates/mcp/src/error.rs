//! Why an MCP operation failed. Every variant names the server.

use std::time::Duration;

/// A failed MCP operation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or reached, or refused the initialization.
    #[error("MCP server {server} did not start: {reason}")]
    Start {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// An operation took longer than its limit.
    #[error("MCP server {server}: {operation} took longer than {limit:?}")]
    Timeout {
        /// The server.
        server: String,
        /// What timed out.
        operation: String,
        /// The limit.
        limit: Duration,
    },
    /// The server broke the protocol (an unreadable message, a schema that is not an object).
    #[error("MCP server {server} broke the protocol: {reason}")]
    Protocol {
        /// The server.
        server: String,
        /// What was wrong.
        reason: String,
    },
    /// The server answered with an error.
    #[error("MCP server {server} refused the request: {message}")]
    Server {
        /// The server.
        server: String,
        /// Its JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The server is gone (it exited, or its connection closed).
    #[error("MCP server {server} is gone: {reason}")]
    Gone {
        /// The server.
        server: String,
        /// What ended it, when known.
        reason: String,
    },
    /// The call was cancelled before the server answered.
    #[error("MCP server {server}: the call was cancelled")]
    Cancelled {
        /// The server.
        server: String,
    },
}
