//! One function per ACP method: validation first, then the agent seams. Setup (`session/new`,
//! `session/load`) is in `setup`, prompts and cancels in `prompt`.
//!
//! Params are decoded by method with the schema crate (never by shape), and every rule is
//! checked before anything is created, so a refused request changes nothing.

mod prompt;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::MethodDispatchError;
use agent_client_protocol_schema::v1::{ClientRequest, McpServer};
use dsh_tools::ApprovalGate;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::PermissionMode;
use crate::conn::Conn;
use crate::permission::SessionGate;
use crate::record::{Grants, Item, PathParts, Record, ordered_path};
use crate::render::RenderCaps;
use crate::rpc::{RpcError, code};

pub(crate) use prompt::{cancel, cancel_record, cancel_request, prompt};
pub(crate) use setup::{load_session, new_session};

/// `initialize`: the exact capabilities dsh has, nothing more.
pub(crate) fn initialize(conn: &Arc<Conn>, params: &Value) -> Result<Value, RpcError> {
    decode("initialize", params)?;
    let terminal_output = params
        .pointer("/clientCapabilities/_meta/terminal_output")
        .is_some_and(|v| v == &Value::Bool(true));
    {
        let mut state = conn.state.lock();
        state.initialized = true;
        state.terminal_output = terminal_output;
    }
    Ok(json!({
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": false},
            "mcpCapabilities": {"http": false, "sse": false},
            "sessionCapabilities": {},
            "auth": {}
        },
        "authMethods": [],
        "agentInfo": {
            "name": "dsh",
            "title": conn.config.agent_title,
            "version": env!("CARGO_PKG_VERSION")
        }
    }))
}

/// Decodes params by method; `mcpServers: null` counts as an empty list.
pub(super) fn decode(method: &str, params: &Value) -> Result<ClientRequest, RpcError> {
    let mut params = params.clone();
    if let Some(servers) = params.get_mut("mcpServers")
        && servers.is_null()
    {
        *servers = json!([]);
    }
    ClientRequest::from_method_and_params(method, &params).map_err(|e| match e {
        MethodDispatchError::UnknownMethod { method } => {
            RpcError::new(code::METHOD_NOT_FOUND, "Method not found")
                .with_data(json!({ "method": method }))
        }
        MethodDispatchError::InvalidPayload { source, .. } => {
            // The detail may quote prompt text: back to its sender, and to debug logs only.
            tracing::debug!(%method, error = %source, "params did not decode");
            RpcError::new(code::INVALID_PARAMS, "Invalid params")
                .with_data(json!({ "detail": source.to_string() }))
        }
        _ => RpcError::new(code::INVALID_PARAMS, "Invalid params"),
    })
}

/// The rules `session/new` and `session/load` share beyond decoding.
pub(super) fn check_scope(
    cwd: &Path,
    additional: &[PathBuf],
    system_prompt: bool,
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
    if system_prompt {
        return Err(RpcError::bad_field(
            "systemPrompt",
            "a system prompt is not supported",
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

/// The parts a new or loaded session's record starts from.
pub(super) struct Parts {
    pub gate: Option<Arc<dyn ApprovalGate>>,
    pub grants: Arc<Grants>,
    pub queue: mpsc::UnboundedSender<Item>,
    pub items: mpsc::UnboundedReceiver<Item>,
}

pub(super) fn parts(conn: &Conn) -> Parts {
    let (queue, items) = mpsc::unbounded_channel();
    let grants = Arc::new(Grants::default());
    let gate = match conn.config.permission {
        PermissionMode::Ask => Some(Arc::new(SessionGate {
            queue: queue.clone(),
            grants: grants.clone(),
            outgoing: conn.outgoing.clone(),
            out: conn.out.clone(),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }) as Arc<dyn ApprovalGate>),
        PermissionMode::Allow => None,
    };
    Parts {
        gate,
        grants,
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
    let record = {
        let mut state = conn.state.lock();
        if state.closed {
            return Err(handle);
        }
        let agent = handle.agent().clone();
        let record = Arc::new(Record {
            id: agent.id().clone(),
            handle,
            agent,
            cwd,
            caps,
            grants: parts.grants,
            inflight: Mutex::new(None),
            idle: watch::channel(true).0,
            queue: parts.queue,
        });
        state
            .sessions
            .insert(record.id.as_str().to_owned(), record.clone());
        record
    };
    let path = ordered_path(
        record.clone(),
        parts.items,
        PathParts {
            out: conn.out.clone(),
            tools: conn.services.tools.clone(),
            outgoing: conn.outgoing.clone(),
            mode: conn.config.permission,
        },
    );
    if conn.scope.spawn(path).is_err() {
        tracing::error!(session = %record.id, "the bridge's scope closed before the session's path started");
    }
    Ok(record)
}
