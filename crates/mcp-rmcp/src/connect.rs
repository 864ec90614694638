//! Starting a stdio server or reaching an HTTP one, and the protocol's initialization.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_mcp::{McpConnector, McpError, McpServer, ServerSpec, Transport};
use dsh_shell::{Enrolment, ProcessContainment};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::watch;

use crate::server::{Listener, RmcpServer};

/// The connector: stdio servers as children in their own process group, HTTP servers over
/// streamable HTTP. SSE-only servers are refused (use streamable HTTP).
#[derive(Clone, Default)]
pub struct RmcpConnector {
    /// Where stdio servers are enrolled, so what they start ends with them and with dsh.
    containment: Option<Arc<dyn ProcessContainment>>,
}

impl RmcpConnector {
    /// A connector that enrols every stdio server it starts in `containment`.
    pub fn contained(containment: Arc<dyn ProcessContainment>) -> RmcpConnector {
        RmcpConnector {
            containment: Some(containment),
        }
    }
}

impl RmcpConnector {
    /// The command that starts `command` with `args` in `sandbox`, through the shell's
    /// sandbox helper; `Err` when it cannot be confined here (it is then not started).
    fn confined(
        &self,
        sandbox: &dsh_mcp::Sandbox,
        command: &str,
        args: &[String],
    ) -> Result<tokio::process::Command, String> {
        let containment = self
            .containment
            .as_ref()
            .ok_or("no shell executor is loaded to confine it")?;
        let policy = dsh_shell::SandboxPolicy::WorkspaceWrite {
            writable: sandbox.writable.clone(),
            network: sandbox.network,
        };
        let argv = std::iter::once(command)
            .chain(args.iter().map(String::as_str))
            .map(std::ffi::OsString::from)
            .collect();
        let confined = containment.confine(&policy, argv)?;
        let (program, rest) = confined
            .argv
            .split_first()
            .ok_or("the sandbox gave no command line")?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(rest).envs(confined.env);
        Ok(cmd)
    }
}

impl std::fmt::Debug for RmcpConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmcpConnector")
            .field("contained", &self.containment.is_some())
            .finish()
    }
}

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
        let mut contained = None;
        let serving = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = match &spec.sandbox {
                    None => {
                        let mut cmd = tokio::process::Command::new(command);
                        cmd.args(args);
                        cmd
                    }
                    Some(sandbox) => self.confined(sandbox, command, args).map_err(|reason| {
                        start(format!("it is to run sandboxed, and cannot: {reason}"))
                    })?,
                };
                cmd.envs(env.iter().map(|(k, v)| (k, v)))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped());
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                // Marked like a shell task: what it starts, even in a session of its own, is
                // ended with it and, by the watchdog, after a SIGKILL of dsh.
                let enrolment = self.containment.as_ref().map(|containment| {
                    let enrolment = containment.enrol(&format!("mcp-{}", spec.name));
                    cmd.env(&enrolment.var, &enrolment.value);
                    (containment.clone(), enrolment)
                });
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
                let leader = transport.id();
                contained = enrolment.map(|(containment, enrolment)| Contained {
                    containment,
                    enrolment,
                    leader,
                });
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
        let failed = match serving {
            Ok(Ok(service)) => {
                return Ok(Arc::new(RmcpServer::new(spec, service, changed, contained)));
            }
            Ok(Err(e)) => start(e.to_string()),
            Err(_) => McpError::Timeout {
                server: spec.name.clone(),
                operation: "starting".into(),
                limit: spec.startup_timeout,
            },
        };
        // The child was killed with its group when the transport dropped; what escaped it
        // goes now.
        if let Some(contained) = contained {
            contained.release().await;
        }
        Err(failed)
    }
}

/// A stdio server's enrolment: released once the server is ended.
pub(crate) struct Contained {
    containment: Arc<dyn ProcessContainment>,
    enrolment: Enrolment,
    leader: Option<u32>,
}

impl Contained {
    /// Ends the server's process and everything carrying its marker.
    pub(crate) async fn release(&self) {
        self.containment.release(&self.enrolment, self.leader).await;
    }
}

/// The server's stderr, line by line (each capped), to dsh's log: never to dsh's stdout or
/// stderr.
fn forward_stderr(server: String, stderr: tokio::process::ChildStderr) {
    tokio::spawn(async move {
        let input = tokio::io::BufReader::new(stderr);
        crate::stderr::lines(input, |line| {
            tracing::info!(target: "dsh::mcp", %server, "{line}");
        })
        .await;
    });
}
