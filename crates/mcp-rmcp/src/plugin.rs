//! `RmcpPlugin`: provides the connector as `dyn McpConnector` on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_mcp::McpConnector;

use crate::connect::RmcpConnector;

/// The plugin named `mcp-rmcp`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RmcpPlugin;

#[async_trait]
impl Plugin for RmcpPlugin {
    fn name(&self) -> &str {
        "mcp-rmcp"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.provide::<dyn McpConnector>(Arc::new(RmcpConnector) as Arc<dyn McpConnector>)?;
        Ok(())
    }
}
