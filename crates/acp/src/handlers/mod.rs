//! One function per ACP method: validation first, then the agent seams. Setup (`session/new`,
//! `session/load`) is in `setup`, prompts and cancels in `prompt`.
//!
//! Each handler receives its method's decoded params (see `request`), and checks every rule
//! before anything is created, so a refused request changes nothing.

mod config;
mod prompt;
mod sessions;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1::McpServer;
use dsh_fs::FileAccess;
use dsh_tools::ApprovalGate;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::conn::Conn;
use crate::files::EditorFiles;
use crate::permission::SessionGate;
use crate::record::{Grants, Item, ModeCell, PathParts, Record, ordered_path};
use crate::render::RenderCaps;
use crate::request::ClientCaps;
use crate::rpc::RpcError;

pub(crate) use config::{session_options, set_config_option, set_mode};
pub(crate) use prompt::{cancel, cancel_record, cancel_request, prompt};
pub(crate) use sessions::{ListCache, close_session, delete_session, list_sessions};
use setup::spawn_setup;
pub(crate) use setup::{load_session, new_session, resume_session};

/// `initialize`: the exact capabilities dsh has, nothing more.
pub(crate) fn initialize(conn: &Arc<Conn>, caps: ClientCaps) -> Value {
    conn.state.initialize(caps);
    // The model picker's values, asked for now so that the first session need not wait.
    let early = conn.clone();
    spawn_setup(conn, async move {
        let _ = config::models(&early).await;
    });
    json!({
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": false, "sse": false},
            "sessionCapabilities": {
                "systemPrompt": {"mode": {"override": {}}},
                "list": {},
                "resume": {},
                "close": {},
                "delete": {}
            },
            "auth": {}
        },
        "authMethods": [],
        "agentInfo": {
            "name": "dsh",
            "title": conn.config.agent_title,
            "version": env!("CARGO_PKG_VERSION")
        }
    })
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

/// Editors pass the user's context servers; dsh accepts them and says once that they are
/// not connected. Commands, URLs and environment values may hold secrets: never logged.
pub(super) fn note_mcp_servers(servers: &[McpServer]) {
    for server in servers {
        let (name, transport) = match server {
            McpServer::Http(s) => (s.name.as_str(), "http"),
            McpServer::Sse(s) => (s.name.as_str(), "sse"),
            McpServer::Stdio(s) => (s.name.as_str(), "stdio"),
            _ => ("?", "other"),
        };
        tracing::warn!(server = %name, %transport, "MCP server not connected: dsh does not use client MCP servers");
    }
}

/// The editor's file access for `session_id`, when the client offers it.
pub(super) fn editor_files(conn: &Conn, session_id: &str) -> Option<Arc<dyn FileAccess>> {
    conn.state.editor_files().then(|| {
        Arc::new(EditorFiles {
            session_id: session_id.to_owned(),
            out: conn.out.clone(),
            outgoing: conn.outgoing.clone(),
        }) as Arc<dyn FileAccess>
    })
}

/// The parts a new or loaded session's record starts from.
pub(super) struct Parts {
    pub gate: Arc<dyn ApprovalGate>,
    pub grants: Arc<Grants>,
    pub mode: ModeCell,
    pub queue: mpsc::UnboundedSender<Item>,
    pub items: mpsc::UnboundedReceiver<Item>,
}

/// A session's parts. Every session has a gate, even in `allow` mode (where it never asks):
/// the mode option may change the mode at any time.
pub(super) fn parts(conn: &Conn) -> Parts {
    let (queue, items) = mpsc::unbounded_channel();
    let grants = Arc::new(Grants::default());
    let mode: ModeCell = Arc::new(parking_lot::Mutex::new(conn.config.permission));
    let gate = Arc::new(SessionGate {
        mode: mode.clone(),
        queue: queue.clone(),
        grants: grants.clone(),
        outgoing: conn.outgoing.clone(),
        out: conn.out.clone(),
        one_at_a_time: tokio::sync::Mutex::new(()),
    });
    Parts {
        gate,
        grants,
        mode,
        queue,
        items,
    }
}

/// Installs a record unless teardown began; returns it, or gives the handle back.
pub(super) fn install(
    conn: &Arc<Conn>,
    handle: dsh_agent::AgentHandle,
    cwd: PathBuf,
    caps: RenderCaps,
    parts: Parts,
) -> Result<Arc<Record>, dsh_agent::AgentHandle> {
    let agent = handle.agent().clone();
    // A session that changed its mode before (in this editor or another) is back in it.
    if let Some(mode) = agent.config().mode {
        *parts.mode.lock() = mode;
    }
    let (commands, warnings) =
        dsh_agent::commands::Commands::discover(&cwd, conn.config.commands_dir.as_deref());
    for warning in warnings {
        tracing::warn!(session = %agent.id(), "{warning}");
    }
    let record = Arc::new(Record {
        id: agent.id().clone(),
        handle: handle.clone(),
        agent,
        cwd,
        caps,
        commands,
        grants: parts.grants,
        mode: parts.mode,
        inflight: Mutex::new(None),
        idle: watch::channel(true).0,
        queue: parts.queue,
    });
    if !conn.state.install(record.clone()) {
        return Err(handle);
    }
    let path = ordered_path(
        record.clone(),
        parts.items,
        PathParts {
            out: conn.out.clone(),
            tools: conn.services.tools.clone(),
            outgoing: conn.outgoing.clone(),
            auth_hint: conn.config.auth_hint.as_deref().map(Arc::from),
            prices: conn.config.prices.clone().map(Arc::new),
        },
    );
    if conn.scope.spawn(path).is_err() {
        tracing::error!(session = %record.id, "the bridge's scope closed before the session's path started");
    }
    Ok(record)
}
