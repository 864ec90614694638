//! Starting a stdio server or reaching an HTTP one, and the protocol's initialization.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_mcp::{McpConnector, McpError, McpServer, ServerSpec, Transport};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;

use crate::server::{Listener, RmcpServer};

/// The connector: stdio servers as children in their own process group, HTTP servers over
/// streamable HTTP. SSE-only servers are refused (use streamable HTTP).
#[derive(Clone, Copy, Debug, Default)]
pub struct RmcpConnector;

#[async_trait]
impl McpConnector for RmcpConnector {
    async fn connect(&self, spec: &ServerSpec) -> Result<Arc<dyn McpServer>, McpError> {
        let (changed, _) = watch::channel(0u64);
        let listener = Listener {
            changed: changed.clone(),
        };
        let start = |reason: String| McpError::Start {
            server: spec.name.clone(),
            reason,
        };
        let serving = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env.iter().map(|(k, v)| (k, v)))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped());
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                // Its own process group, killed whole: nothing the server starts outlives it.
                let mut wrapped = CommandWrap::from(cmd);
                wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
                let (transport, stderr) = TokioChildProcess::builder(wrapped)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| start(format!("cannot run {command:?}: {e}")))?;
                if let Some(stderr) = stderr {
                    forward_stderr(spec.name.clone(), stderr);
                }
                tokio::time::timeout(spec.startup_timeout, listener.serve(transport)).await
            }
            Transport::Http { url, headers } => {
                // TLS on ring, the provider the model client already links: rustls wants one
                // chosen per process, and a second installation is a harmless no-op.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut map = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|e| start(format!("header {name:?}: {e}")))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|e| start(format!("the value of header {name}: {e}")))?;
                    map.insert(name, value);
                }
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(map);
                let transport = StreamableHttpClientTransport::from_config(config);
                tokio::time::timeout(spec.startup_timeout, listener.serve(transport)).await
            }
        };
        let service = match serving {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return Err(start(e.to_string())),
            Err(_) => {
                return Err(McpError::Timeout {
                    server: spec.name.clone(),
                    operation: "starting".into(),
                    limit: spec.startup_timeout,
                });
            }
        };
        Ok(Arc::new(RmcpServer::new(spec, service, changed)))
    }
}

/// The server's stderr, line by line, to dsh's log: never to dsh's stdout or stderr.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(target: "dsh::mcp", %server, "{line}");
        }
    });
}
