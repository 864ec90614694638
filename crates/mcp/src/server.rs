//! The seam: a connector that starts or reaches servers, and a running server.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{CallOutcome, McpError, McpTool, ServerSpec};

/// Starts or connects MCP servers (the provider's service).
#[async_trait]
pub trait McpConnector: Send + Sync + 'static {
    /// Starts or reaches the server `spec` describes and finishes the protocol's
    /// initialization, within `spec.startup_timeout`.
    async fn connect(&self, spec: &ServerSpec) -> Result<Arc<dyn McpServer>, McpError>;
}

/// One running server.
#[async_trait]
pub trait McpServer: Send + Sync + 'static {
    /// The name it was configured under.
    fn name(&self) -> &str;

    /// Its tools now.
    async fn tools(&self) -> Result<Vec<McpTool>, McpError>;

    /// Calls `tool` with `arguments` (a JSON object). `cancel` firing sends MCP's
    /// cancellation and ends the call with [`McpError::Cancelled`].
    async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        cancel: CancellationToken,
    ) -> Result<CallOutcome, McpError>;

    /// A counter that grows each time the server says its tool list changed.
    fn tools_changed(&self) -> watch::Receiver<u64>;

    /// Ends the server: closes its connection and, for a child process, ends its process
    /// group. Idempotent.
    async fn shutdown(&self);
}
