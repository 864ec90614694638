//! `McpToolsPlugin`: starts the configured servers and keeps their tools registered.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_mcp::{McpConnector, McpError, McpTool, ServerSpec};
use dsh_tools::{McpToolHost, Tool, ToolRegistry};
use serde_json::Value;
use tokio::sync::watch;

use crate::adapter::{MAX_NAME_BYTES, McpToolAdapter, cut};
use crate::connection::Connection;
use crate::names::tool_names;
use crate::schema::checked_tool;

/// The plugin named `tool-mcp`: the servers of the configuration, shared by every session of
/// the process and shut down with the plugin.
#[derive(Clone, Debug, Default)]
pub struct McpToolsPlugin {
    servers: Vec<ServerSpec>,
    /// Servers of the configuration that could not even be described (a secret's variable
    /// unset): reported with those that fail to start.
    failed: Vec<McpError>,
}

impl McpToolsPlugin {
    /// A plugin starting `servers`.
    pub fn new(servers: Vec<ServerSpec>) -> McpToolsPlugin {
        McpToolsPlugin {
            servers,
            failed: Vec::new(),
        }
    }

    /// Also reports `failed`, servers that will not start, where front ends report those
    /// that fail to ([`McpToolHost::ready`]).
    pub fn with_failed(mut self, failed: Vec<McpError>) -> McpToolsPlugin {
        self.failed = failed;
        self
    }
}

#[async_trait]
impl Plugin for McpToolsPlugin {
    fn name(&self) -> &str {
        "tool-mcp"
    }

    /// Provides the host at once and starts the configured servers in the background: a
    /// front end's first answer never waits for them (`McpToolHost::ready` does).
    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry = scope.require::<dyn ToolRegistry>()?;
        let connector = scope.require::<dyn McpConnector>()?;
        let (started, ready) = watch::channel(None);
        // Sessions that bring servers of their own (an editor's) attach them through this.
        let host: Arc<dyn McpToolHost> = Arc::new(Host {
            connector: connector.clone(),
            ready,
        });
        scope.provide::<dyn McpToolHost>(host)?;
        let servers = self.servers.clone();
        let mut problems: Vec<String> = self.failed.iter().map(not_offered).collect();
        let owner = scope.clone();
        scope.spawn(async move {
            match start_servers(&owner, &registry, &connector, servers).await {
                Ok(more) => problems.extend(more),
                Err(error) => {
                    tracing::warn!("the configured MCP servers were not attached: {error}");
                }
            }
            // Front ends tell the person (`ready` answers these); the log keeps them too.
            for problem in &problems {
                tracing::info!("{problem}");
            }
            started.send_replace(Some(problems));
        })?;
        Ok(())
    }
}

struct Host {
    connector: Arc<dyn McpConnector>,
    /// `Some` once the configured servers started or failed: what to tell the person.
    ready: watch::Receiver<Option<Vec<String>>>,
}

#[async_trait]
impl McpToolHost for Host {
    async fn ready(&self) -> Vec<String> {
        let mut ready = self.ready.clone();
        match ready.wait_for(Option::is_some).await {
            Ok(problems) => problems.clone().unwrap_or_default(),
            // The plugin's scope ended before they started: there is nothing to wait for.
            Err(_) => Vec::new(),
        }
    }

    async fn attach(
        &self,
        scope: &Scope,
        registry: Arc<dyn ToolRegistry>,
        servers: Vec<ServerSpec>,
    ) -> Vec<String> {
        match start_servers(scope, &registry, &self.connector, servers).await {
            Ok(problems) => problems,
            Err(error) => {
                tracing::warn!("the session's MCP servers were not attached: {error}");
                Vec::new()
            }
        }
    }
}

/// The sentence for a server that did not start.
fn not_offered(error: &McpError) -> String {
    format!("{error}; its tools are not offered")
}

/// Starts `servers` in parallel, each within its startup timeout, and registers each one's
/// tools in `registry` under `scope` (kept registered as the server's tool list changes,
/// across a restart too). Answers what to tell the person, a sentence each: the servers that
/// did not start and the tools left out for their schemas. Disposing `scope` shuts the
/// servers down.
pub async fn start_servers(
    scope: &Scope,
    registry: &Arc<dyn ToolRegistry>,
    connector: &Arc<dyn McpConnector>,
    servers: Vec<ServerSpec>,
) -> Result<Vec<String>, BoxError> {
    let started = futures::future::join_all(servers.into_iter().map(|spec| {
        let (connector, scope) = (connector.clone(), scope.clone());
        async move { Connection::start(spec, connector, scope).await }
    }))
    .await;
    let mut problems = Vec::new();
    for started in started {
        let connection = match started {
            Ok(connection) => connection,
            Err(error) => {
                problems.push(not_offered(&error));
                continue;
            }
        };
        let shut = connection.clone();
        scope.add_disposer(move || async move { shut.shutdown().await })?;
        let mut changes = connection.changes();
        let seen = *changes.borrow_and_update();
        let listed = listing(&connection).await;
        if let Some(listed) = &listed {
            problems.extend(listed.refused.iter().cloned());
        }
        let mut tools = install(scope, registry, &connection, listed)?;
        connection.applied(seen);
        // A changed tool list (or a restarted server) replaces the server's tools: the new
        // list is fetched first, so the old tools stay offered until it is in.
        let (owner, registry) = (scope.clone(), registry.clone());
        scope.spawn(async move {
            while changes.changed().await.is_ok() {
                let seen = *changes.borrow_and_update();
                let listed = listing(&connection).await;
                for refused in listed.iter().flat_map(|l| &l.refused) {
                    tracing::warn!("{refused}");
                }
                if let Some(old) = tools.take() {
                    old.dispose().await;
                }
                match install(&owner, &registry, &connection, listed) {
                    Ok(new) => tools = new,
                    Err(error) => {
                        tracing::warn!(server = %connection.name(), "{error}");
                        break;
                    }
                }
                connection.applied(seen);
            }
            connection.unfollowed();
        })?;
    }
    Ok(problems)
}

/// A server's tools as listed: those the model API can take, with their checked schemas,
/// and a sentence for each tool left out the first time it is.
struct Listing {
    offered: Vec<(McpTool, Value)>,
    refused: Vec<String>,
}

/// The server's tools now, or `None` when the server is not running or could not list them.
async fn listing(connection: &Connection) -> Option<Listing> {
    let server = connection.current()?;
    let listed = match server.tools().await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!("{error}; its tools are not offered");
            return None;
        }
    };
    let mut listing = Listing {
        offered: Vec::new(),
        refused: Vec::new(),
    };
    for tool in listed {
        match checked_tool(&tool) {
            Ok(schema) => listing.offered.push((tool, schema)),
            // Once per tool: a re-listing after a change would say it again.
            Err(why) if connection.first_refusal(&tool.name) => listing.refused.push(format!(
                "MCP server {}: tool {:?} is not offered: {why}",
                connection.name(),
                cut(&tool.name, MAX_NAME_BYTES)
            )),
            Err(_) => {}
        }
    }
    Some(listing)
}

/// Registers `listed` in a child scope of its own (`None` for no listing).
fn install(
    scope: &Scope,
    registry: &Arc<dyn ToolRegistry>,
    connection: &Arc<Connection>,
    listed: Option<Listing>,
) -> Result<Option<Scope>, BoxError> {
    let Some(Listing { offered, .. }) = listed else {
        return Ok(None);
    };
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
