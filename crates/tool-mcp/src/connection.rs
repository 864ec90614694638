//! One configured server as the tools see it: started once, and started again once when it
//! is found gone.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_mcp::{CallOutcome, CancellationToken, McpConnector, McpError, McpServer, ServerSpec};
use parking_lot::Mutex;

pub(crate) struct Connection {
    spec: ServerSpec,
    connector: Arc<dyn McpConnector>,
    server: Mutex<Option<Arc<dyn McpServer>>>,
    /// The one restart after a crash has been used.
    restarted: AtomicBool,
}

impl Connection {
    /// Starts `spec`'s server.
    pub(crate) async fn start(
        spec: ServerSpec,
        connector: Arc<dyn McpConnector>,
    ) -> Result<Arc<Connection>, McpError> {
        let server = connector.connect(&spec).await?;
        Ok(Arc::new(Connection {
            spec,
            connector,
            server: Mutex::new(Some(server)),
            restarted: AtomicBool::new(false),
        }))
    }

    pub(crate) fn name(&self) -> &str {
        &self.spec.name
    }

    /// The running server, when there is one.
    pub(crate) fn current(&self) -> Option<Arc<dyn McpServer>> {
        self.server.lock().clone()
    }

    /// Calls `tool`. A server found gone fails this call and is started again, once, by the
    /// next one.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        cancel: CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        let server = match self.current() {
            Some(server) => server,
            None => self.restart().await?,
        };
        let outcome = server.call(tool, arguments, cancel).await;
        if let Err(McpError::Gone { .. }) = &outcome {
            let mut current = self.server.lock();
            if current.as_ref().is_some_and(|s| Arc::ptr_eq(s, &server)) {
                *current = None;
            }
        }
        outcome
    }

    async fn restart(&self) -> Result<Arc<dyn McpServer>, McpError> {
        if self.restarted.swap(true, Ordering::AcqRel) {
            return Err(McpError::Gone {
                server: self.spec.name.clone(),
                reason: "it stopped again after a restart; it is not started a third time".into(),
            });
        }
        tracing::warn!(server = %self.spec.name, "the MCP server is gone: starting it again");
        let server = self.connector.connect(&self.spec).await?;
        *self.server.lock() = Some(server.clone());
        Ok(server)
    }

    /// Shuts the server down.
    pub(crate) async fn shutdown(&self) {
        let server = self.server.lock().take();
        if let Some(server) = server {
            server.shutdown().await;
        }
    }
}
