//! `session/new` and `session/load`: validated, then created or resumed on a task of the
//! bridge's scope, and installed only if teardown has not begun.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    LoadSessionRequest, McpServer, NewSessionRequest, ResumeSessionRequest, SystemPrompt,
};
use dsh_agent::{AgentError, AgentOverrides, Audience, CallerPrompt, CreateAgent, ResumeAgent};
use dsh_session::SessionId;
use serde_json::json;
use tokio::sync::oneshot;

use super::{check_scope, install, mcp_specs, prepare, session_answer};
use crate::conn::Conn;
use crate::live_session::LiveSession;
use crate::path::Item;
use crate::render::RenderCaps;
use crate::reply::Reply;
use crate::rpc::{RpcError, code};
use crate::system_prompt::caller_prompt;

/// `session/new`.
pub(crate) fn new_session(conn: &Arc<Conn>, reply: Reply, request: NewSessionRequest) {
    if let Some(guidance) = &conn.config().auth_required {
        return reply.send(Err(RpcError::auth_required(guidance)));
    }
    let NewSessionRequest {
        cwd,
        additional_directories,
        mcp_servers,
        system_prompt,
        ..
    } = request;
    let checked = check_scope(&cwd, &additional_directories, true)
        .and_then(|()| caller_prompt(system_prompt))
        .and_then(|caller| Ok((caller, mcp_specs(&mcp_servers, &cwd)?)));
    let (caller, servers) = match checked {
        Ok(checked) => checked,
        Err(error) => return reply.send(Err(error)),
    };
    let conn2 = conn.clone();
    let task = async move {
        let conn = conn2;
        let outcome = setup_contained("session/new", async {
            let record = create(&conn, cwd, caller, servers).await?;
            let answer = session_answer(&conn, &record, Some(record.id.as_str()))?;
            Ok((record, answer))
        })
        .await;
        let created = outcome.as_ref().ok().map(|(record, _)| record.id.clone());
        reply.answer_text(outcome.map(|(_, answer)| answer)).await;
        if let Some(session) = created {
            announce(&conn, session.as_str());
        }
    };
    spawn_setup(conn, task);
}

/// Awaits a setup so that a panic in it (in the agent factory, say) is its request's
/// `-32603`, and a load's reservation is still released.
pub(super) async fn setup_contained<T>(
    method: &str,
    setup: impl Future<Output = Result<T, RpcError>>,
) -> Result<T, RpcError> {
    dsh_kernel::contain::catch_future(setup)
        .await
        .unwrap_or_else(|panic| {
            tracing::error!(%method, %panic, "a session setup panicked");
            Err(RpcError::internal_failure())
        })
}

pub(super) fn spawn_setup(conn: &Arc<Conn>, task: impl Future<Output = ()> + Send + 'static) {
    let tracked = conn.setups().track_future(task);
    if conn.scope().spawn(tracked).is_err() {
        tracing::debug!("a setup after the bridge's scope closed was dropped");
    }
}

/// What every agent of an ACP session is told beyond the loop's defaults: its answers are
/// read in an editor, and the client's own system prompt, when it sent one.
fn overrides(caller: Option<CallerPrompt>) -> AgentOverrides {
    AgentOverrides {
        system_prompt: caller,
        audience: Some(Audience::Editor),
        ..AgentOverrides::default()
    }
}

async fn create(
    conn: &Arc<Conn>,
    cwd: PathBuf,
    caller: Option<CallerPrompt>,
    servers: Vec<dsh_mcp::ServerSpec>,
) -> Result<Arc<LiveSession>, RpcError> {
    if conn.closing().is_cancelled() {
        return Err(RpcError::shutting_down());
    }
    let session_id = SessionId::mint();
    let prepared = prepare(conn, session_id.as_str(), servers).await;
    let mut request = CreateAgent::new(conn.scope().clone())
        .with_id(session_id.clone())
        .with_cwd(cwd.clone())
        .with_options(overrides(caller))
        .with_approval(prepared.parts.gate.clone());
    if let Some(files) = prepared.files.clone() {
        request = request.with_files(files);
    }
    if let Some(tools) = prepared.tools.clone() {
        request = request.with_tools(tools);
    }
    let handle = match conn.services().registry.create(request).await {
        Ok(handle) => handle,
        Err(e) => {
            prepared.abandon().await;
            return Err(RpcError::new(
                code::INTERNAL,
                format!("could not create session: {e}"),
            ));
        }
    };
    let caps = RenderCaps {
        terminal_card: conn.state().terminal_output(),
        compaction: conn.state().compaction(),
        plan: conn.state().plan(),
        notices: conn.state().notices(),
        subagents: conn.state().subagents(),
    };
    match install(conn, handle, cwd.clone(), caps, prepared.parts) {
        Ok(record) => {
            tracing::info!(session = %session_id, cwd = %cwd.display(), "session created");
            Ok(record)
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
pub(crate) fn load_session(conn: &Arc<Conn>, reply: Reply, request: LoadSessionRequest) {
    let LoadSessionRequest {
        cwd,
        additional_directories,
        mcp_servers,
        session_id,
        system_prompt,
        ..
    } = request;
    let attach = Attach {
        session_id: session_id.0.to_string(),
        cwd,
        additional_directories,
        mcp_servers,
        system_prompt,
        replay: true,
    };
    attach_session(conn, reply, attach);
}

/// `session/resume`: as `session/load`, without sending the history back (the client keeps
/// its own); the model's history is whole all the same.
pub(crate) fn resume_session(conn: &Arc<Conn>, reply: Reply, request: ResumeSessionRequest) {
    let ResumeSessionRequest {
        cwd,
        additional_directories,
        mcp_servers,
        session_id,
        system_prompt,
        ..
    } = request;
    let attach = Attach {
        session_id: session_id.0.to_string(),
        cwd,
        additional_directories,
        mcp_servers,
        system_prompt,
        replay: false,
    };
    attach_session(conn, reply, attach);
}

/// What `session/load` and `session/resume` share.
struct Attach {
    session_id: String,
    cwd: PathBuf,
    additional_directories: Vec<PathBuf>,
    mcp_servers: Vec<McpServer>,
    system_prompt: Option<SystemPrompt>,
    /// Send the stored history to the client (`load`), or only take in its figures (`resume`).
    replay: bool,
}

fn attach_session(conn: &Arc<Conn>, reply: Reply, attach: Attach) {
    if let Some(guidance) = &conn.config().auth_required {
        return reply.send(Err(RpcError::auth_required(guidance)));
    }
    let Attach {
        session_id: sent,
        cwd,
        additional_directories,
        mcp_servers,
        system_prompt,
        replay,
    } = attach;
    let method = if replay {
        "session/load"
    } else {
        "session/resume"
    };
    let caller = match check_scope(&cwd, &additional_directories, false)
        .and_then(|()| caller_prompt(system_prompt))
    {
        Ok(caller) => caller,
        Err(error) => return reply.send(Err(error)),
    };
    let Ok(parsed) = SessionId::parse(&sent) else {
        return reply.send(Err(RpcError::session_not_found(&sent)));
    };
    let servers = match mcp_specs(&mcp_servers, &cwd) {
        Ok(servers) => servers,
        Err(error) => return reply.send(Err(error)),
    };
    if !conn.state().reserve_load(&sent) {
        return reply.send(Err(RpcError::new(
            code::INVALID_PARAMS,
            "session is already loaded",
        )
        .with_data(json!({ "sessionId": sent }))));
    }
    let conn2 = conn.clone();
    let task = async move {
        let conn = conn2;
        let request = LoadRequest {
            id: &parsed,
            sent: &sent,
            cwd: &cwd,
            caller,
            replay,
            servers,
        };
        let outcome = setup_contained(method, load(&conn, request)).await;
        let attached = outcome.is_ok();
        reply.answer_text(outcome).await;
        if attached {
            announce(&conn, &sent);
        }
        release_backlog(&conn, &sent);
    };
    spawn_setup(conn, task);
}

/// Tells the client the session's commands, what did not start for it, and the model list if
/// it came after the answer, once it knows the session: after the answer. An update naming a
/// session before its answer is one the client cannot place.
fn announce(conn: &Arc<Conn>, session: &str) {
    if let Some(record) = conn.state().record(session) {
        record.push(Item::Commands);
        for notice in std::mem::take(&mut *record.unannounced.lock()) {
            record.push(Item::Notice(notice));
        }
        super::config::announced(conn, &record);
    }
}

/// Serves, in order, the prompts that waited for a load, then lifts the reservation.
fn release_backlog(conn: &Arc<Conn>, id: &str) {
    while let Some(held) = conn.state().next_deferred(id) {
        conn.dispatch_deferred(held);
    }
}

/// What a load or resume asks for.
struct LoadRequest<'a> {
    id: &'a SessionId,
    sent: &'a str,
    cwd: &'a Path,
    caller: Option<CallerPrompt>,
    replay: bool,
    servers: Vec<dsh_mcp::ServerSpec>,
}

/// The stored sessions a call of `parent` started, oldest first, with their events; one
/// that cannot be read is left out (and logged).
async fn stored_children(
    conn: &Arc<Conn>,
    parent: &dsh_session::SessionId,
    cwd: &str,
) -> Vec<crate::path::StoredChild> {
    let persistence = &conn.services().persistence;
    let query = dsh_session::ListQuery {
        cwd: Some(cwd.to_owned()),
        project: None,
    };
    let Ok(listing) = persistence.list(&query).await else {
        return Vec::new();
    };
    let mut headers: Vec<&dsh_session::SessionHeader> = listing
        .sessions
        .iter()
        .map(|s| &s.header)
        .filter(|h| h.parent.as_ref() == Some(parent) && h.parent_call.is_some())
        .collect();
    headers.sort_by_key(|h| h.created_at);
    let mut children = Vec::new();
    for header in headers {
        let vocabulary = dsh_session::EventVocabulary::new();
        match persistence.inspect(&header.id, &vocabulary).await {
            Ok(loaded) => children.push(crate::path::StoredChild {
                header: loaded.header,
                events: loaded.events.into(),
            }),
            Err(e) => {
                tracing::warn!(child = %header.id, "a subagent's session is not replayed: {e}")
            }
        }
    }
    children
}

/// Without a `systemPrompt`, the loaded agent keeps the one recorded with the session.
async fn load(
    conn: &Arc<Conn>,
    request: LoadRequest<'_>,
) -> Result<Box<serde_json::value::RawValue>, RpcError> {
    let LoadRequest {
        id,
        sent,
        cwd,
        caller,
        replay,
        servers,
    } = request;
    if conn.closing().is_cancelled() {
        return Err(RpcError::shutting_down());
    }
    let header = match conn.services().persistence.header(id).await {
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
    let prepared = prepare(conn, id.as_str(), servers).await;
    let mut request = ResumeAgent::new(conn.scope().clone(), id.clone())
        .with_options(overrides(caller))
        .with_approval(prepared.parts.gate.clone());
    if let Some(files) = prepared.files.clone() {
        request = request.with_files(files);
    }
    if let Some(tools) = prepared.tools.clone() {
        request = request.with_tools(tools);
    }
    let handle = match conn.services().registry.resume(request).await {
        Ok(handle) => handle,
        Err(e) => {
            prepared.abandon().await;
            return Err(match e {
                AgentError::NotFound { .. } => RpcError::session_not_found(sent),
                other => {
                    tracing::warn!(session = %sent, error = %other, "a session could not be loaded");
                    RpcError::new(code::INTERNAL, "session log is unreadable")
                        .with_data(json!({ "sessionId": sent }))
                }
            });
        }
    };
    let events = handle.agent().session().events();
    let caps = RenderCaps {
        terminal_card: conn.state().terminal_output(),
        compaction: conn.state().compaction(),
        plan: conn.state().plan(),
        notices: conn.state().notices(),
        subagents: conn.state().subagents(),
    };
    let record = match install(conn, handle, stored, caps, prepared.parts) {
        Ok(record) => record,
        Err(handle) => {
            handle.dispose().await;
            return Err(RpcError::shutting_down());
        }
    };
    // A client that shows child sessions gets the stored children's too.
    let children = match replay && caps.subagents {
        true => stored_children(conn, id, &header.cwd).await,
        false => Vec::new(),
    };
    let (done, replayed) = oneshot::channel();
    record.push(Item::Replay {
        events,
        children,
        done,
        silent: !replay,
    });
    let _ = replayed.await;
    tracing::info!(session = %sent, cwd = %cwd.display(), replay, "session attached");
    session_answer(conn, &record, None)
}
