//! `RmcpPlugin`: provides the connector as `dyn McpConnector` on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_mcp::McpConnector;
use dsh_shell::ProcessContainment;

use crate::connect::RmcpConnector;

/// The plugin named `mcp-rmcp`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RmcpPlugin;

#[async_trait]
impl Plugin for RmcpPlugin {
    fn name(&self) -> &str {
        "mcp-rmcp"
    }

    /// Enrols the servers it starts with the shell's containment when there is one (loaded
    /// before this plugin), so they are ended as a shell task is.
    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let connector = match scope.get::<dyn ProcessContainment>() {
            Some(containment) => RmcpConnector::contained(containment),
            None => RmcpConnector::default(),
        };
        scope.provide::<dyn McpConnector>(Arc::new(connector) as Arc<dyn McpConnector>)?;
        Ok(())
    }
}
