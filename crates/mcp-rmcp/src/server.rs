//! One running server: its tools, calls with their limits and cancellation, and shutdown.

use dsh_mcp::{CallOutcome, CancellationToken, McpError, McpServer, McpTool, ServerSpec};
use parking_lot::Mutex;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError};
use tokio::sync::watch;

use crate::connect::Contained;
use crate::content;

/// The client side's handler: it only listens for the tool list changing.
#[derive(Clone)]
pub(crate) struct Listener {
    pub(crate) changed: watch::Sender<u64>,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }
}

pub(crate) struct RmcpServer {
    name: String,
    tool_timeout: std::time::Duration,
    service: Mutex<Option<RunningService<RoleClient, Listener>>>,
    peer: rmcp::Peer<RoleClient>,
    changed: watch::Sender<u64>,
    contained: Option<Contained>,
}

impl RmcpServer {
    pub(crate) fn new(
        spec: &ServerSpec,
        service: RunningService<RoleClient, Listener>,
        changed: watch::Sender<u64>,
        contained: Option<Contained>,
    ) -> RmcpServer {
        RmcpServer {
            name: spec.name.clone(),
            tool_timeout: spec.tool_timeout,
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            changed,
            contained,
        }
    }

    fn failed(&self, error: ServiceError) -> McpError {
        match error {
            ServiceError::McpError(data) => McpError::Server {
                server: self.name.clone(),
                code: i64::from(data.code.0),
                message: data.message.to_string(),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpError::Gone {
                server: self.name.clone(),
                reason: error.to_string(),
            },
            ServiceError::Cancelled { .. } => McpError::Cancelled {
                server: self.name.clone(),
            },
            other => McpError::Protocol {
                server: self.name.clone(),
                reason: other.to_string(),
            },
        }
    }
}

#[async_trait::async_trait]
impl McpServer for RmcpServer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        let tools = self
            .peer
            .list_all_tools()
            .await
            .map_err(|e| self.failed(e))?;
        tools
            .iter()
            .map(|tool| {
                serde_json::to_value(tool)
                    .map(|value| content::tool(&value))
                    .map_err(|e| McpError::Protocol {
                        server: self.name.clone(),
                        reason: e.to_string(),
                    })
            })
            .collect()
    }

    async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        cancel: CancellationToken,
    ) -> Result<CallOutcome, McpError> {
        let arguments = match arguments {
            serde_json::Value::Object(map) => Some(map),
            serde_json::Value::Null => None,
            other => {
                return Err(McpError::Protocol {
                    server: self.name.clone(),
                    reason: format!("the arguments of {tool} are not an object: {other}"),
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        // Dropping the request (a cancel, a timeout) sends the server MCP's cancellation.
        let call = self.peer.call_tool(params);
        let bounded = tokio::time::timeout(self.tool_timeout, call);
        let result = tokio::select! {
            result = bounded => match result {
                Ok(answer) => answer.map_err(|e| self.failed(e))?,
                Err(_) => {
                    return Err(McpError::Timeout {
                        server: self.name.clone(),
                        operation: format!("calling {tool}"),
                        limit: self.tool_timeout,
                    });
                }
            },
            () = cancel.cancelled() => {
                return Err(McpError::Cancelled { server: self.name.clone() });
            }
        };
        let value = serde_json::to_value(&result).map_err(|e| McpError::Protocol {
            server: self.name.clone(),
            reason: e.to_string(),
        })?;
        Ok(content::outcome(&value))
    }

    fn tools_changed(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Dropping the server without this does the same: the running service's drop closes
    /// the transport, which kills a child's process group.
    async fn shutdown(&self) {
        let service = self.service.lock().take();
        if let Some(service) = service {
            // Closing the transport ends a child (its process group is killed on drop).
            let _ = service.cancel().await;
        }
        // What left the group (a `setsid` daemon) carries the marker: it goes too.
        if let Some(contained) = &self.contained {
            contained.release().await;
        }
    }
}
