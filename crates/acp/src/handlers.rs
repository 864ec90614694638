//! One function per ACP method: validation first, then the agent seams.
//!
//! Params are decoded by method with the schema crate (never by shape), and every rule is
//! checked before anything is created, so a refused request changes nothing.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::MethodDispatchError;
use agent_client_protocol_schema::v1::{
    ClientRequest, ContentBlock, LoadSessionRequest, McpServer, NewSessionRequest, PromptRequest,
};
use dsh_agent::{AgentError, CancelCause, CreateAgent, ResumeAgent, UserMessage};
use dsh_session::SessionId;
use dsh_tools::ApprovalGate;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::PermissionMode;
use crate::conn::Conn;
use crate::permission::SessionGate;
use crate::record::{Grants, Inflight, Item, PathParts, Record, ordered_path};
use crate::render::RenderCaps;
use crate::rpc::{RpcError, code, error_frame, result_frame};

/// `initialize`: the exact capabilities dsh has, nothing more.
pub(crate) fn initialize(conn: &Arc<Conn>, params: &Value) -> Result<Value, RpcError> {
    decode(conn, "initialize", params)?;
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
fn decode(conn: &Conn, method: &str, params: &Value) -> Result<ClientRequest, RpcError> {
    let _ = conn;
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
fn check_scope(
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
fn note_mcp_servers(servers: &[McpServer]) {
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
struct Parts {
    gate: Option<Arc<dyn ApprovalGate>>,
    grants: Arc<Grants>,
    queue: mpsc::UnboundedSender<Item>,
    items: mpsc::UnboundedReceiver<Item>,
}

fn parts(conn: &Conn) -> Parts {
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
fn install(
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

/// `session/new`.
pub(crate) fn new_session(conn: &Arc<Conn>, id: Value, params: Value) {
    let request = match decode(conn, "session/new", &params) {
        Ok(ClientRequest::NewSessionRequest(request)) => request,
        Ok(_) => return conn.reply(id, Err(RpcError::new(code::INTERNAL, "misrouted request"))),
        Err(error) => return conn.reply(id, Err(error)),
    };
    let NewSessionRequest {
        cwd,
        additional_directories,
        mcp_servers,
        system_prompt,
        ..
    } = request;
    if let Err(error) = check_scope(&cwd, &additional_directories, system_prompt.is_some(), true) {
        return conn.reply(id, Err(error));
    }
    note_mcp_servers(&mcp_servers);
    let conn2 = conn.clone();
    let task = async move {
        let conn = conn2;
        let outcome = create(&conn, cwd).await;
        let frame = match outcome {
            Ok(session) => result_frame(&id, json!({ "sessionId": session })),
            Err(error) => error_frame(&id, &error),
        };
        conn.out.send(frame).await;
    };
    spawn_setup(conn, task);
}

fn spawn_setup(conn: &Arc<Conn>, task: impl Future<Output = ()> + Send + 'static) {
    let tracked = conn.setups.track_future(task);
    if conn.scope.spawn(tracked).is_err() {
        tracing::debug!("a setup after the bridge's scope closed was dropped");
    }
}

async fn create(conn: &Arc<Conn>, cwd: PathBuf) -> Result<String, RpcError> {
    if conn.closing.is_cancelled() {
        return Err(RpcError::shutting_down());
    }
    let session_id = SessionId::mint();
    let parts = parts(conn);
    let mut request = CreateAgent::new(conn.scope.clone())
        .with_id(session_id.clone())
        .with_cwd(cwd.clone());
    if let Some(gate) = parts.gate.clone() {
        request = request.with_approval(gate);
    }
    let handle = conn
        .services
        .registry
        .create(request)
        .await
        .map_err(|e| RpcError::new(code::INTERNAL, format!("could not create session: {e}")))?;
    let caps = RenderCaps {
        terminal_card: conn.state.lock().terminal_output,
    };
    match install(conn, handle, cwd.clone(), caps, parts) {
        Ok(_) => {
            tracing::info!(session = %session_id, cwd = %cwd.display(), "session created");
            Ok(session_id.as_str().to_owned())
        }
        Err(handle) => {
            handle.dispose().await;
            Err(RpcError::shutting_down())
        }
    }
}

/// `a/./b//` and `a/b` name the same directory; `..` is kept and symlinks are not followed.
fn normalise(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// `session/load`.
pub(crate) fn load_session(conn: &Arc<Conn>, id: Value, params: Value) {
    let request = match decode(conn, "session/load", &params) {
        Ok(ClientRequest::LoadSessionRequest(request)) => request,
        Ok(_) => return conn.reply(id, Err(RpcError::new(code::INTERNAL, "misrouted request"))),
        Err(error) => return conn.reply(id, Err(error)),
    };
    let LoadSessionRequest {
        cwd,
        additional_directories,
        mcp_servers,
        session_id,
        system_prompt,
        ..
    } = request;
    if let Err(error) = check_scope(
        &cwd,
        &additional_directories,
        system_prompt.is_some(),
        false,
    ) {
        return conn.reply(id, Err(error));
    }
    let sent = session_id.0.to_string();
    let Ok(parsed) = SessionId::parse(&sent) else {
        return conn.reply(id, Err(RpcError::session_not_found(&sent)));
    };
    {
        let mut state = conn.state.lock();
        if state.sessions.contains_key(&sent) || state.loading.contains_key(&sent) {
            drop(state);
            return conn.reply(
                id,
                Err(
                    RpcError::new(code::INVALID_PARAMS, "session is already loaded")
                        .with_data(json!({ "sessionId": sent })),
                ),
            );
        }
        state.loading.insert(sent.clone(), Vec::new());
    }
    note_mcp_servers(&mcp_servers);
    let conn2 = conn.clone();
    let task = async move {
        let conn = conn2;
        let outcome = load(&conn, &parsed, &sent, &cwd).await;
        let frame = match outcome {
            Ok(()) => result_frame(&id, json!({})),
            Err(error) => error_frame(&id, &error),
        };
        conn.out.send(frame).await;
        release_backlog(&conn, &sent);
    };
    spawn_setup(conn, task);
}

/// Serves, in order, the frames that waited for a load, then lifts the reservation.
fn release_backlog(conn: &Arc<Conn>, id: &str) {
    loop {
        let waiting = {
            let mut state = conn.state.lock();
            match state.loading.get_mut(id) {
                Some(backlog) if !backlog.is_empty() => std::mem::take(backlog),
                _ => {
                    state.loading.remove(id);
                    return;
                }
            }
        };
        for frame in waiting {
            conn.dispatch_deferred(frame.0);
        }
    }
}

async fn load(conn: &Arc<Conn>, id: &SessionId, sent: &str, cwd: &Path) -> Result<(), RpcError> {
    if conn.closing.is_cancelled() {
        return Err(RpcError::shutting_down());
    }
    let header = match conn.services.persistence.header(id).await {
        Ok(Some(header)) => header,
        Ok(None) => return Err(RpcError::session_not_found(sent)),
        Err(e) => {
            return Err(RpcError::new(code::INTERNAL, e.to_string())
                .with_data(json!({ "sessionId": sent })));
        }
    };
    let stored = PathBuf::from(&header.cwd);
    if normalise(&stored) != normalise(cwd) {
        return Err(RpcError::new(
            code::INVALID_PARAMS,
            "the session belongs to another directory",
        )
        .with_data(json!({
            "sessionId": sent,
            "sessionCwd": header.cwd,
            "requestCwd": cwd,
        })));
    }
    let parts = parts(conn);
    let mut request = ResumeAgent::new(conn.scope.clone(), id.clone());
    if let Some(gate) = parts.gate.clone() {
        request = request.with_approval(gate);
    }
    let handle = conn
        .services
        .registry
        .resume(request)
        .await
        .map_err(|e| match e {
            AgentError::NotFound { .. } => RpcError::session_not_found(sent),
            other => {
                tracing::warn!(session = %sent, error = %other, "a session could not be loaded");
                RpcError::new(code::INTERNAL, "session log is unreadable")
                    .with_data(json!({ "sessionId": sent }))
            }
        })?;
    let events = handle.agent().session().events();
    let caps = RenderCaps {
        terminal_card: conn.state.lock().terminal_output,
    };
    let record = match install(conn, handle, stored, caps, parts) {
        Ok(record) => record,
        Err(handle) => {
            handle.dispose().await;
            return Err(RpcError::shutting_down());
        }
    };
    let (done, replayed) = oneshot::channel();
    record.push(Item::Replay { events, done });
    let _ = replayed.await;
    tracing::info!(session = %sent, cwd = %cwd.display(), "session loaded");
    Ok(())
}

/// The prompt's text: text blocks verbatim, resource links as one line each.
fn prompt_text(blocks: &[ContentBlock]) -> Result<String, RpcError> {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut substance = false;
    for block in blocks {
        match block {
            ContentBlock::Text(text) => {
                substance |= !text.text.trim().is_empty();
                parts.push(text.text.clone());
            }
            ContentBlock::ResourceLink(link) => {
                substance = true;
                let mut line = format!("[resource link: {} {}]", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(" ({mime})"));
                }
                parts.push(line);
            }
            other => {
                let kind = match other {
                    ContentBlock::Image(_) => "image",
                    ContentBlock::Audio(_) => "audio",
                    ContentBlock::Resource(_) => "resource",
                    _ => "unknown",
                };
                return Err(RpcError::new(
                    code::INVALID_PARAMS,
                    format!("{kind} content is not supported"),
                )
                .with_data(json!({ "unsupported": kind })));
            }
        }
    }
    if !substance {
        return Err(RpcError::new(code::INVALID_PARAMS, "prompt is empty"));
    }
    Ok(parts.join("\n"))
}

/// `session/prompt`: synchronous up to `Agent::send`, so a cancel in the same write
/// always finds the prompt it cancels.
pub(crate) fn prompt(conn: &Arc<Conn>, id: Value, params: Value) {
    let sent = params
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let request = match decode(conn, "session/prompt", &params) {
        Ok(ClientRequest::PromptRequest(request)) => request,
        Ok(_) => return conn.reply(id, Err(RpcError::new(code::INTERNAL, "misrouted request"))),
        Err(error) => return conn.reply(id, Err(error)),
    };
    let PromptRequest {
        session_id, prompt, ..
    } = request;
    let sent = sent.unwrap_or_else(|| session_id.0.to_string());
    if conn.closing.is_cancelled() {
        return conn.reply(id, Err(RpcError::shutting_down()));
    }
    let Some(record) = conn.record(&sent) else {
        return conn.reply(id, Err(RpcError::session_not_found(&sent)));
    };
    let text = match prompt_text(&prompt) {
        Ok(text) => text,
        Err(error) => return conn.reply(id, Err(error)),
    };
    let message = UserMessage::user(text);
    let message_id = message.id.clone();
    {
        let mut inflight = record.inflight.lock();
        if inflight.is_some() {
            drop(inflight);
            return conn.reply(
                id,
                Err(RpcError::new(
                    code::INVALID_PARAMS,
                    "a prompt is already in progress for this session; send session/cancel \
                     and wait for its response",
                )
                .with_data(json!({ "sessionId": sent }))),
            );
        }
        *inflight = Some(Inflight {
            request_id: id.clone(),
            message_id: message_id.clone(),
            turn: None,
            cancel_requested: false,
        });
    }
    let _ = record.idle.send(false);
    // No lock is held here: sending appends to the session, whose observers take locks.
    let ticket = match record.agent.send(message) {
        Ok(ticket) => ticket,
        Err(e) => {
            *record.inflight.lock() = None;
            let _ = record.idle.send(true);
            let code = match e {
                AgentError::InvalidMessage { .. } => code::INVALID_PARAMS,
                _ => code::INTERNAL,
            };
            return conn.reply(id, Err(RpcError::new(code, e.to_string())));
        }
    };
    let waiter = record.clone();
    let settle = async move {
        let outcome = ticket.outcome().await;
        waiter.push(Item::Settle {
            message_id,
            outcome: Some(outcome),
        });
    };
    if conn.scope.spawn(settle).is_err() {
        tracing::debug!("a prompt after the bridge's scope closed");
    }
}

/// `session/cancel`: no output, ever; the prompt's response says `cancelled`.
pub(crate) fn cancel(conn: &Arc<Conn>, params: &Value) {
    let Some(sent) = params.get("sessionId").and_then(Value::as_str) else {
        return;
    };
    if let Some(record) = conn.record(sent) {
        cancel_record(conn, &record);
    }
}

/// `$/cancel_request`: cancels the open prompt whose request id matches exactly.
pub(crate) fn cancel_request(conn: &Arc<Conn>, params: &Value) {
    let Some(wanted) = params.get("requestId") else {
        return;
    };
    let records: Vec<Arc<Record>> = conn.state.lock().sessions.values().cloned().collect();
    for record in records {
        let matches = record
            .inflight
            .lock()
            .as_ref()
            .is_some_and(|open| &open.request_id == wanted);
        if matches {
            cancel_record(conn, &record);
        }
    }
}

/// Marks the open prompt cancelled, stops the agent, and arms the grace backstop.
pub(crate) fn cancel_record(conn: &Arc<Conn>, record: &Arc<Record>) {
    let message_id = {
        let mut inflight = record.inflight.lock();
        match inflight.as_mut() {
            Some(open) if !open.cancel_requested => {
                open.cancel_requested = true;
                open.message_id.clone()
            }
            _ => return,
        }
    };
    record.agent.cancel(CancelCause::User);
    let grace = conn.config.cancel_grace;
    let waiter = record.clone();
    let backstop = async move {
        tokio::time::sleep(grace).await;
        waiter.push(Item::Settle {
            message_id,
            outcome: None,
        });
    };
    if conn.scope.spawn(backstop).is_err() {
        tracing::debug!("a cancel after the bridge's scope closed");
    }
}
