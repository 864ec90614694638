//! The service that gives an MCP server's tools to the agents: how a front end attaches the
//! servers an editor sent for one session, without naming the crate that implements it.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::Scope;
use dsh_mcp::ServerSpec;

use crate::registry::ToolRegistry;

/// Starts MCP servers and keeps their tools registered (the MCP tools plugin's service).
#[async_trait]
pub trait McpToolHost: Send + Sync + 'static {
    /// Waits until the servers of the configuration (shared by every session) have started
    /// or failed, each within its startup timeout, and answers what to tell the person about
    /// them: a sentence for each server that did not start and each tool left out. Their
    /// start begins when the host is loaded, so a front end answers before they are up and
    /// waits here only where their tools matter: before an agent's first request.
    async fn ready(&self) -> Vec<String>;

    /// Starts `servers` in parallel, each within its startup timeout, registers each one's
    /// tools in `registry` under `scope`, and answers what to tell the person, as
    /// [`McpToolHost::ready`] does. Disposing `scope` shuts the servers down.
    async fn attach(
        &self,
        scope: &Scope,
        registry: Arc<dyn ToolRegistry>,
        servers: Vec<ServerSpec>,
    ) -> Vec<String>;
}
