//! `McpToolsPlugin`: starts the configured servers and keeps their tools registered.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_mcp::{McpConnector, McpError, ServerSpec};
use dsh_tools::{McpToolHost, Tool, ToolRegistry};

use crate::adapter::McpToolAdapter;
use crate::connection::Connection;
use crate::names::tool_names;
use crate::schema::checked_schema;

/// The plugin named `tool-mcp`: the servers of the configuration, shared by every session of
/// the process and shut down with the plugin.
#[derive(Clone, Debug, Default)]
pub struct McpToolsPlugin {
    servers: Vec<ServerSpec>,
}

impl McpToolsPlugin {
    /// A plugin starting `servers`.
    pub fn new(servers: Vec<ServerSpec>) -> McpToolsPlugin {
        McpToolsPlugin { servers }
    }
}

#[async_trait]
impl Plugin for McpToolsPlugin {
    fn name(&self) -> &str {
        "tool-mcp"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry = scope.require::<dyn ToolRegistry>()?;
        let connector = scope.require::<dyn McpConnector>()?;
        // Sessions that bring servers of their own (an editor's) attach them through this.
        let host: Arc<dyn McpToolHost> = Arc::new(Host {
            connector: connector.clone(),
        });
        scope.provide::<dyn McpToolHost>(host)?;
        if self.servers.is_empty() {
            return Ok(());
        }
        for failed in start_servers(scope, &registry, &connector, self.servers.clone()).await? {
            tracing::warn!("{failed}; its tools are not offered");
        }
        Ok(())
    }
}

struct Host {
    connector: Arc<dyn McpConnector>,
}

#[async_trait]
impl McpToolHost for Host {
    async fn attach(
        &self,
        scope: &Scope,
        registry: Arc<dyn ToolRegistry>,
        servers: Vec<ServerSpec>,
    ) -> Vec<McpError> {
        match start_servers(scope, &registry, &self.connector, servers).await {
            Ok(failed) => failed,
            Err(error) => {
                tracing::warn!("the session's MCP servers were not attached: {error}");
                Vec::new()
            }
        }
    }
}

/// Starts `servers` in parallel, each within its startup timeout, and registers each one's
/// tools in `registry` under `scope` (kept registered as the server's tool list changes);
/// answers the servers that did not start. Disposing `scope` shuts the servers down.
pub async fn start_servers(
    scope: &Scope,
    registry: &Arc<dyn ToolRegistry>,
    connector: &Arc<dyn McpConnector>,
    servers: Vec<ServerSpec>,
) -> Result<Vec<McpError>, BoxError> {
    let started = futures::future::join_all(servers.into_iter().map(|spec| {
        let connector = connector.clone();
        async move { Connection::start(spec, connector).await }
    }))
    .await;
    let mut failed = Vec::new();
    for started in started {
        let connection = match started {
            Ok(connection) => connection,
            Err(error) => {
                failed.push(error);
                continue;
            }
        };
        let shut = connection.clone();
        scope.add_disposer(move || async move { shut.shutdown().await })?;
        let tools = register(scope, registry, &connection).await?;
        // A changed tool list replaces the server's tools.
        if let Some(server) = connection.current() {
            let mut changed = server.tools_changed();
            let (scope, registry) = (scope.clone(), registry.clone());
            scope.clone().spawn(async move {
                let mut tools = tools;
                while changed.changed().await.is_ok() {
                    if let Some(old) = tools.take() {
                        old.dispose().await;
                    }
                    match register(&scope, &registry, &connection).await {
                        Ok(new) => tools = new,
                        Err(error) => {
                            tracing::warn!(server = %connection.name(), "{error}");
                            return;
                        }
                    }
                }
            })?;
        }
    }
    Ok(failed)
}

/// Registers the server's tools now, in a child scope of their own (`None` when the server
/// could not list them).
async fn register(
    scope: &Scope,
    registry: &Arc<dyn ToolRegistry>,
    connection: &Arc<Connection>,
) -> Result<Option<Scope>, BoxError> {
    let Some(server) = connection.current() else {
        return Ok(None);
    };
    let listed = match server.tools().await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!("{error}; its tools are not offered");
            return Ok(None);
        }
    };
    let mut offered = Vec::new();
    for tool in listed {
        match checked_schema(&tool.input_schema) {
            Ok(schema) => offered.push((tool, schema)),
            Err(why) => tracing::warn!(
                server = %connection.name(),
                "tool {} is not offered: {why}",
                tool.name
            ),
        }
    }
    let taken: Vec<String> = registry
        .snapshot()
        .names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let remote: Vec<String> = offered.iter().map(|(t, _)| t.name.clone()).collect();
    let names = tool_names(connection.name(), &remote, &taken);
    let child = scope.child(&format!("mcp-{}", connection.name()))?;
    for ((tool, schema), name) in offered.into_iter().zip(names) {
        let adapter = McpToolAdapter {
            name,
            tool,
            schema,
            connection: connection.clone(),
        };
        registry.register(&child, Arc::new(adapter) as Arc<dyn Tool>)?;
    }
    Ok(Some(child))
}
