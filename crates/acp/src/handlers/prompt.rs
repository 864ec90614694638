//! `session/prompt`, `session/cancel` and `$/cancel_request`.

use std::sync::Arc;

use agent_client_protocol_schema::v1::{PromptRequest, StopReason};
use dsh_agent::commands::Invocation;
use dsh_agent::{
    AgentError, CancelCause, ConfigChange, ConfigOrigin, MessageId, TurnOutcome, UserMessage,
};
use serde_json::{Value, json};

use crate::conn::Conn;
use crate::content::{PromptContent, prompt_content};
use crate::live_session::{LiveSession, NotOpened, stopped};
use crate::path::Item;
use crate::reply::Reply;
use crate::rpc::{RpcError, code};

/// What a prompt asks of the agent.
enum Work {
    Say(UserMessage),
    Compact(MessageId),
}

/// `session/prompt`: synchronous up to `Agent::send`, so a cancel in the same write
/// always finds the prompt it cancels.
pub(crate) fn prompt(
    conn: &Arc<Conn>,
    reply: Reply,
    request: PromptRequest,
    cancelled_ahead: bool,
) {
    let PromptRequest {
        session_id, prompt, ..
    } = request;
    let sent: &str = &session_id.0;
    if conn.closing().is_cancelled() {
        return reply.send(Err(RpcError::shutting_down()));
    }
    let Some(record) = conn.state().record(sent) else {
        return reply.send(Err(RpcError::session_not_found(sent)));
    };
    let PromptContent { text, resources } = match prompt_content(&prompt) {
        Ok(content) => content,
        Err(error) => return reply.send(Err(error)),
    };
    let said = |text: String| UserMessage {
        resources: resources.clone(),
        ..UserMessage::user(text)
    };
    // A slash command: `/compact` is a compaction turn; another is the prompt it expands to;
    // a name that is no command is refused with those there are, never sent to the model.
    if let Some(unknown) = record.commands.unknown(&text) {
        return reply.send(Err(RpcError::new(code::INVALID_PARAMS, unknown)));
    }
    let work = match record.commands.invoke(&text) {
        Some(Invocation::Compact) => Work::Compact(MessageId::mint()),
        Some(Invocation::Prompt(expanded)) => Work::Say(said(expanded)),
        None => Work::Say(said(text)),
    };
    let message_id = match &work {
        Work::Say(message) => message.id.clone(),
        Work::Compact(id) => id.clone(),
    };
    // From here the prompt's reply travels with its turn: the session's ordered path answers
    // it at settlement, and a turn dropped unsettled still answers -32603.
    match record
        .prompt
        .open(reply, message_id.clone(), cancelled_ahead)
    {
        Ok(()) => {}
        Err(NotOpened::Busy(reply)) => {
            return reply.send(Err(RpcError::new(
                code::INVALID_PARAMS,
                "a prompt is already in progress for this session; send session/cancel and \
                 wait for its response",
            )
            .with_data(json!({ "sessionId": sent }))));
        }
        Err(NotOpened::Cancelled(reply)) => return reply.send(stopped(StopReason::Cancelled)),
    }
    // A project's hook files not yet trusted are asked about first, in the prompt's window,
    // so that trusted ones run in this very turn.
    let to_ask = std::mem::take(&mut *record.hooks_to_ask.lock());
    if to_ask.is_empty() {
        return hand_over(conn, &record, work, message_id);
    }
    let conn2 = conn.clone();
    let asking = async move {
        let conn = conn2;
        if super::trust::ask(&conn, &record, to_ask).await {
            hand_over(&conn, &record, work, message_id);
        } else {
            record.push(Item::Settle {
                message_id,
                outcome: Some(TurnOutcome::Discarded {
                    cause: CancelCause::User,
                }),
            });
        }
    };
    if conn.scope().spawn(asking).is_err() {
        tracing::debug!("a prompt after the bridge's scope closed");
    }
}

/// Hands the open prompt's work to the agent; its ticket settles the prompt.
fn hand_over(conn: &Arc<Conn>, record: &Arc<LiveSession>, work: Work, message_id: MessageId) {
    let sent = record.id.as_str();
    // Where this process sends the session's requests is recorded with its first prompt (a
    // session nobody prompted stores nothing), and again only when it changes.
    if let Some(server) = conn.config().server.clone()
        && let Err(e) = record
            .agent
            .configure(ConfigChange::Server(server), ConfigOrigin::Flag)
    {
        tracing::warn!(session = %sent, "the server was not recorded: {e}");
    }
    // No lock is held here: `send` only enqueues, but it is foreign code that emits agent
    // events to listeners synchronously and may wake a driver whose events this record's
    // ordered path renders under the in-flight lock. Its panic is this prompt's failure, not
    // a session left busy forever.
    let taken = match dsh_kernel::contain::catch(|| match work {
        Work::Say(message) => record.agent.send(message),
        Work::Compact(id) => record.agent.compact(id),
    }) {
        Ok(sent) => sent.map_err(|e| RpcError::new(send_error_code(&e), e.to_string())),
        Err(panic) => {
            tracing::error!(session = %sent, %panic, "the agent panicked taking a prompt");
            Err(RpcError::internal_failure())
        }
    };
    let ticket = match taken {
        Ok(ticket) => ticket,
        Err(error) => return record.prompt.refuse(error),
    };
    let waiter = record.clone();
    let settle = async move {
        let outcome = ticket.outcome().await;
        waiter.push(Item::Settle {
            message_id,
            outcome: Some(outcome),
        });
    };
    if conn.scope().spawn(settle).is_err() {
        tracing::debug!("a prompt after the bridge's scope closed");
    }
}

/// The JSON-RPC code of a prompt the agent refused: the client's fault only when the message
/// itself was wrong.
fn send_error_code(error: &AgentError) -> i32 {
    match error {
        AgentError::InvalidMessage { .. } => code::INVALID_PARAMS,
        AgentError::Disposed { .. }
        | AgentError::DuplicateMessage { .. }
        | AgentError::InvalidRequest { .. }
        | AgentError::AlreadyLive { .. }
        | AgentError::AlreadyStored { .. }
        | AgentError::NotFound { .. }
        | AgentError::PersistenceUnavailable
        | AgentError::InvalidLog { .. }
        | AgentError::ShuttingDown
        | AgentError::Persistence(_)
        | AgentError::Session(_) => code::INTERNAL,
    }
}

/// `session/cancel`: no output, ever; the prompt's response says `cancelled`.
pub(crate) fn cancel(conn: &Arc<Conn>, session_id: &str) {
    if let Some(record) = conn.state().record(session_id) {
        cancel_record(conn, &record);
    } else if conn.state().subagents() && conn.state().child_root(session_id).is_some() {
        // A child announced as cancellable: only its work stops; its parent's call reads
        // that it was cancelled.
        if let Ok(id) = dsh_session::SessionId::parse(session_id)
            && let Some(child) = conn.services().registry.get(&id)
        {
            child.cancel(CancelCause::User);
        }
    }
}

/// `$/cancel_request`: cancels the open prompt whose request id matches exactly.
pub(crate) fn cancel_request(conn: &Arc<Conn>, wanted: &Value) {
    for record in conn.state().records() {
        if record.prompt.is_request(wanted) {
            cancel_record(conn, &record);
        }
    }
}

/// Marks the open prompt cancelled, stops the agent, and arms the grace backstop.
pub(crate) fn cancel_record(conn: &Arc<Conn>, record: &Arc<LiveSession>) {
    let Some(message_id) = record.prompt.cancel() else {
        return;
    };
    record.agent.cancel(CancelCause::User);
    let grace = conn.config().cancel_grace;
    let waiter = record.clone();
    let backstop = async move {
        tokio::time::sleep(grace).await;
        waiter.push(Item::Settle {
            message_id,
            outcome: None,
        });
    };
    if conn.scope().spawn(backstop).is_err() {
        tracing::debug!("a cancel after the bridge's scope closed");
    }
}
