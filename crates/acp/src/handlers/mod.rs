//! One function per ACP method: validation first, then the agent seams. Setup (`session/new`,
//! `session/load`) is in `setup`, prompts and cancels in `prompt`.
//!
//! Each handler receives its method's decoded params (see `request`), and checks every rule
//! before anything is created, so a refused request changes nothing.

mod config;
mod prompt;
mod sessions;
mod setup;
mod trust;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::ProtocolVersion;
use agent_client_protocol_schema::v1::McpServer;
use agent_client_protocol_schema::v1::{
    AgentAuthCapabilities, AgentCapabilities, Implementation, InitializeResponse, McpCapabilities,
    PromptCapabilities, SessionCapabilities, SessionCloseCapabilities, SessionDeleteCapabilities,
    SessionListCapabilities, SessionResumeCapabilities, SessionSystemPromptCapabilities,
    SessionSystemPromptModeCapabilities, SessionSystemPromptOverrideCapabilities,
};
use dsh_fs::FileAccess;
use dsh_mcp::{ServerSpec, Transport};
use dsh_tools::{ApprovalGate, McpToolHost, OverlayToolRegistry, ToolRegistry};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::conn::Conn;
use crate::files::EditorFiles;
use crate::live_session::{Grants, LiveSession, ModeCell, Pickers, PromptSlot};
use crate::path::{Item, OrderedPath, PathParts};
use crate::permission::SessionGate;
use crate::render::RenderCaps;
use crate::reply::result;
use crate::request::ClientCaps;
use crate::rpc::RpcError;

pub(crate) use config::{session_answer, set_config_option, set_mode};
pub(crate) use prompt::{cancel, cancel_record, cancel_request, prompt};
pub(crate) use sessions::{ListCache, close_session, delete_session, list_sessions};

pub(crate) use setup::{load_session, new_session, resume_session};

/// `initialize`: the exact capabilities dsh has, nothing more.
pub(crate) fn initialize(conn: &Arc<Conn>, caps: ClientCaps) -> Result<Value, RpcError> {
    conn.state().initialize(caps);
    let mcp = conn.scope().get::<dyn McpToolHost>().is_some();
    // The model picker's values, asked for now; no session waits for them.
    config::fetch_models(conn);
    let sessions = SessionCapabilities::new()
        .system_prompt(
            SessionSystemPromptCapabilities::new().mode(
                SessionSystemPromptModeCapabilities::new()
                    .override_(SessionSystemPromptOverrideCapabilities::new()),
            ),
        )
        .list(SessionListCapabilities::new())
        .resume(SessionResumeCapabilities::new())
        .close(SessionCloseCapabilities::new())
        .delete(SessionDeleteCapabilities::new());
    let capabilities = AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            PromptCapabilities::new()
                .image(false)
                .audio(false)
                .embedded_context(true),
        )
        // Streamable HTTP and stdio, when an MCP service is loaded; SSE never.
        .mcp_capabilities(McpCapabilities::new().http(mcp).sse(false))
        .session_capabilities(sessions)
        .auth(AgentAuthCapabilities::new());
    let answer = InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(capabilities)
        .auth_methods(Vec::new())
        .agent_info(
            Implementation::new("dsh", env!("CARGO_PKG_VERSION"))
                .title(conn.config().agent_title.clone()),
        );
    result(&answer)
}

/// The rules `session/new` and `session/load` share beyond decoding.
pub(super) fn check_scope(
    cwd: &Path,
    additional: &[PathBuf],
    must_exist: bool,
) -> Result<(), RpcError> {
    if !cwd.is_absolute() {
        return Err(RpcError::bad_field("cwd", "cwd must be an absolute path"));
    }
    if must_exist && !cwd.is_dir() {
        return Err(RpcError::bad_field(
            "cwd",
            "cwd is not an existing directory",
        ));
    }
    if !additional.is_empty() {
        return Err(RpcError::bad_field(
            "additionalDirectories",
            "additional directories are not supported",
        ));
    }
    Ok(())
}

/// The MCP servers an editor sent for a session, as the MCP seam takes them: a stdio server
/// runs in the session's directory. An SSE-only server is refused: dsh speaks MCP's
/// streamable HTTP, which replaced it. Commands, URLs and values may hold secrets: never
/// logged.
pub(super) fn mcp_specs(servers: &[McpServer], cwd: &Path) -> Result<Vec<ServerSpec>, RpcError> {
    servers
        .iter()
        .map(|server| match server {
            McpServer::Stdio(s) => Ok(ServerSpec {
                transport: Transport::Stdio {
                    command: s.command.display().to_string(),
                    args: s.args.clone(),
                    env: s
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    cwd: Some(cwd.to_path_buf()),
                },
                ..ServerSpec::stdio(s.name.clone(), "", Vec::<String>::new())
            }),
            McpServer::Http(s) => Ok(ServerSpec {
                transport: Transport::Http {
                    url: s.url.clone(),
                    headers: s
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                },
                ..ServerSpec::http(s.name.clone(), "")
            }),
            McpServer::Sse(s) => Err(RpcError::bad_field(
                "mcpServers",
                format!(
                    "MCP server {:?} is an SSE server, which dsh does not speak: give its \
                     streamable HTTP endpoint instead",
                    s.name
                ),
            )),
            _ => Err(RpcError::bad_field(
                "mcpServers",
                "an MCP server of an unknown transport",
            )),
        })
        .collect()
}

/// Starts a session's own MCP servers (an editor's), with their tools over the process's:
/// the tools to give its agent, the scope that owns the servers (disposed with the session),
/// and what to tell the person (servers that did not start, tools left out). Without servers, or without an MCP service, nothing.
async fn session_mcp(
    conn: &Conn,
    servers: Vec<ServerSpec>,
) -> Option<(Arc<dyn ToolRegistry>, dsh_kernel::Scope, Vec<String>)> {
    if servers.is_empty() {
        return None;
    }
    let Some(host) = conn.scope().get::<dyn McpToolHost>() else {
        tracing::warn!("the session's MCP servers are not connected: no MCP service is loaded");
        return None;
    };
    let scope = conn.scope().child("session-mcp").ok()?;
    let tools: Arc<dyn ToolRegistry> =
        Arc::new(OverlayToolRegistry::new(conn.services().tools.clone()));
    let notes = host.attach(&scope, tools.clone(), servers).await;
    Some((tools, scope, notes))
}

/// The editor's file access for `session_id`, when the client offers it.
fn editor_files(conn: &Conn, session_id: &str) -> Option<Arc<dyn FileAccess>> {
    conn.state().editor_files().then(|| {
        Arc::new(EditorFiles {
            session_id: session_id.to_owned(),
            out: conn.out().clone(),
            outgoing: conn.outgoing().clone(),
        }) as Arc<dyn FileAccess>
    })
}

/// The parts a new or loaded session's record starts from.
pub(super) struct Parts {
    pub gate: Arc<dyn ApprovalGate>,
    pub grants: Arc<Grants>,
    pub mode: ModeCell,
    /// The tools its agent has: the process's, with its own MCP servers' over them. The
    /// session's path renders calls from it, so an editor's server's tool is titled and
    /// asked about as its agent sees it.
    pub tools: Arc<dyn ToolRegistry>,
    /// The scope owning the session's own MCP servers, when it has any.
    pub mcp: Option<dsh_kernel::Scope>,
    /// What to tell the person about its MCP servers: those that did not start, and tools
    /// left out for their schemas.
    pub mcp_notes: Vec<String>,
    pub queue: mpsc::UnboundedSender<Item>,
    pub items: mpsc::UnboundedReceiver<Item>,
}

/// A session's parts. Every session has a gate, even in `allow` mode (where it never asks):
/// the mode option may change the mode at any time.
fn parts(conn: &Conn) -> Parts {
    let (queue, items) = mpsc::unbounded_channel();
    let grants = Arc::new(Grants {
        rules: conn.config().rules.clone(),
        ..Grants::default()
    });
    let mode: ModeCell = Arc::new(parking_lot::Mutex::new(conn.config().permission));
    let gate = Arc::new(SessionGate {
        mode: mode.clone(),
        queue: queue.clone(),
        grants: grants.clone(),
        outgoing: conn.outgoing().clone(),
        out: conn.out().clone(),
        one_at_a_time: tokio::sync::Mutex::new(()),
    });
    Parts {
        gate,
        grants,
        mode,
        tools: conn.services().tools.clone(),
        mcp: None,
        mcp_notes: Vec::new(),
        queue,
        items,
    }
}

/// What every agent of an ACP session is given besides its options: its gate (in the parts
/// its record starts from), the editor's files, and the tools of its own MCP servers.
pub(super) struct Prepared {
    pub parts: Parts,
    pub files: Option<Arc<dyn FileAccess>>,
    pub tools: Option<Arc<dyn ToolRegistry>>,
}

/// Prepares session `id`: waits for the configured MCP servers (started with the process)
/// and starts the ones the editor sent for it. Every session is told which of either did not
/// start, since each one lacks their tools.
pub(super) async fn prepare(conn: &Conn, id: &str, servers: Vec<ServerSpec>) -> Prepared {
    let mut parts = parts(conn);
    if let Some(host) = conn.scope().get::<dyn McpToolHost>() {
        parts.mcp_notes = host.ready().await;
    }
    let tools = session_mcp(conn, servers)
        .await
        .map(|(tools, scope, notes)| {
            parts.tools = tools.clone();
            parts.mcp = Some(scope);
            parts.mcp_notes.extend(notes);
            tools
        });
    Prepared {
        parts,
        files: editor_files(conn, id),
        tools,
    }
}

impl Prepared {
    /// The agent was not made: its MCP servers go.
    pub(super) async fn abandon(self) {
        if let Some(servers) = self.parts.mcp {
            servers.dispose().await;
        }
    }
}

/// Installs a record unless teardown began; returns it, or gives the handle back.
pub(super) fn install(
    conn: &Arc<Conn>,
    handle: dsh_agent::AgentHandle,
    cwd: PathBuf,
    caps: RenderCaps,
    mut parts: Parts,
) -> Result<Arc<LiveSession>, dsh_agent::AgentHandle> {
    let agent = handle.agent().clone();
    let mcp_notes = std::mem::take(&mut parts.mcp_notes);
    // A session that changed its mode before (in this editor or another) is back in it.
    if let Some(mode) = agent.config().mode {
        *parts.mode.lock() = mode;
    }
    // The "always" answers remembered for this project: the loop will not ask about what
    // they cover, so neither is it announced as waiting.
    if let Some(remembered) = &conn.config().remembered {
        let rules = remembered.rules(&cwd);
        parts
            .grants
            .always
            .lock()
            .extend(dsh_tools::Rule::parse_each(&rules).0);
    }
    let (commands, warnings) =
        dsh_agent::commands::Commands::discover(&cwd, conn.config().commands_dir.as_deref());
    for warning in warnings {
        tracing::warn!(session = %agent.id(), "{warning}");
    }
    // The project's hook files its first prompt asks about: known before the client can send
    // that prompt (it may arrive as soon as the session's answer does).
    let hooks_to_ask = conn
        .scope()
        .get::<dyn dsh_hooks::HookSource>()
        .map(|source| source.untrusted(&cwd))
        .unwrap_or_default();
    let record = Arc::new(LiveSession {
        id: agent.id().clone(),
        handle: handle.clone(),
        agent,
        cwd,
        caps,
        commands,
        grants: parts.grants,
        mode: parts.mode,
        mcp: parts.mcp,
        unannounced: Mutex::new(Vec::new()),
        hooks_to_ask: Mutex::new(hooks_to_ask),
        trust_asked: std::sync::atomic::AtomicU32::new(0),
        pickers: Mutex::new(Pickers::default()),
        prompt: PromptSlot::default(),
        queue: parts.queue,
    });
    if !conn.state().install(record.clone()) {
        return Err(handle);
    }
    // A server that did not start is told to the person once the client knows the session
    // (see `setup::announce`); the session works without it.
    for note in mcp_notes {
        tracing::warn!(session = %record.id, "{note}");
        if conn.state().notices() {
            record.unannounced.lock().push(note);
        }
    }
    let path = OrderedPath::new(
        record.clone(),
        PathParts {
            out: conn.out().clone(),
            tools: parts.tools,
            outgoing: conn.outgoing().clone(),
            auth_hint: conn.config().auth_hint.as_deref().map(Arc::from),
            prices: conn.config().prices.clone().map(Arc::new),
        },
    )
    .run(parts.items);
    if conn.scope().spawn(path).is_err() {
        tracing::error!(session = %record.id, "the bridge's scope closed before the session's path started");
    }
    Ok(record)
}
