//! The session record and its ordered path.
//!
//! Every frame about one session — its live updates, its permission requests, its prompt's
//! response and its load replay — is produced by one task reading one queue. That single
//! path is what makes the ordering promises hold: a `tool_call` precedes the permission
//! request naming it, and a prompt's response follows every update of its turn.

use dsh_agent::record::{CompactingRecord, ToolProgressRecord};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    Notice, NoticeSeverity, PermissionOption, PermissionOptionKind, SessionNotification,
    SessionUpdate, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent::commands::Commands;
use dsh_agent::record::Record as LogRecord;
use dsh_agent::{Agent, AgentHandle, MessageId, TurnOutcome};
use dsh_session::{EventType, SessionEvent, SessionId};
use dsh_tools::{Roots, ToolRegistry, ToolResultView};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::PermissionMode;
use crate::outgoing::{Answer, OutgoingTable};
use crate::permission::withdraw;
use crate::render::{RenderCaps, RenderContext, RenderMode, Renderer, compacting_updates};
use crate::reply::Reply;
use crate::rpc::request_frame;
use crate::stop::stop_reason;
use crate::transport::FrameSender;

/// The prompt a session is working on.
pub(crate) struct Inflight {
    /// The `session/prompt` request's duty to answer: taken by its settlement, and answering
    /// `-32603` if the prompt is dropped unsettled (teardown).
    pub reply: Reply,
    /// The message the prompt became; binds the prompt to its turn.
    pub message_id: MessageId,
    /// The turn the message entered, once its `user/message` was seen.
    pub turn: Option<u32>,
    /// A cancel arrived: the response is `cancelled` whatever the turn becomes.
    pub cancel_requested: bool,
}

/// The permission grants of one session (tool names), shared with its gate.
#[derive(Default)]
pub(crate) struct Grants {
    pub always: Mutex<HashSet<String>>,
}

/// What the ordered path is handed.
pub(crate) enum Item {
    /// An event the store published for this session.
    Event(Arc<SessionEvent>),
    /// A running call's output, as it arrives (never stored).
    Progress(ToolProgressRecord),
    /// A compaction started, or ended without a record (never stored).
    Compacting(CompactingRecord),
    /// Send the session's commands (`available_commands_update`).
    Commands,
    /// An update the bridge made itself (an option the client did not choose changed).
    Update(Box<SessionUpdate>),
    /// A passing state worth telling a client that shows notices (a retry).
    Notice(String),
    /// The gate asks about a call: send the request, hand back its id and answer.
    Permission {
        turn: u32,
        step: u32,
        call_id: String,
        tool: String,
        /// What the call would change (an edit's diff), shown in the question.
        preview: Option<ToolResultView>,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    },
    /// An asked-about call was allowed: it is now running.
    Allowed {
        turn: u32,
        step: u32,
        call_id: String,
    },
    /// The prompt's ticket resolved (`None`: the cancel grace ran out first).
    Settle {
        message_id: MessageId,
        outcome: Option<TurnOutcome>,
    },
    /// Replay these events for `session/load`, then acknowledge.
    Replay {
        events: Arc<[Arc<SessionEvent>]>,
        done: oneshot::Sender<()>,
        /// Render without sending (`session/resume`): the live renderer still goes on from
        /// the session's figures.
        silent: bool,
    },
}

/// A session's permission mode, shared by its gate and the option that changes it.
pub(crate) type ModeCell = Arc<Mutex<PermissionMode>>;

/// One live session on the connection.
pub(crate) struct Record {
    pub id: SessionId,
    pub handle: AgentHandle,
    pub agent: Arc<dyn Agent>,
    pub cwd: PathBuf,
    pub caps: RenderCaps,
    /// The slash commands of the session's directory.
    pub commands: Commands,
    pub grants: Arc<Grants>,
    /// The permission mode its gate applies.
    pub mode: ModeCell,
    /// The scope of the session's own MCP servers (an editor's): disposed with the session.
    pub mcp: Option<dsh_kernel::Scope>,
    /// Notices waiting for the client to know the session (its servers that did not start).
    pub unannounced: Mutex<Vec<String>>,
    /// Whether the client knows the session (its answer went), and whether the model picker
    /// it was shown had the server's list: a list that came later is sent as an update.
    pub pickers: Mutex<Pickers>,
    pub inflight: Mutex<Option<Inflight>>,
    /// `true` while no prompt is open; teardown waits on it. Always set with `send_replace`:
    /// `send` changes nothing while no receiver exists, which is most of the time.
    pub idle: watch::Sender<bool>,
    pub queue: mpsc::UnboundedSender<Item>,
}

impl Record {
    /// Queues an item; after the path stopped (teardown) nothing is left to render it.
    pub(crate) fn push(&self, item: Item) {
        let _ = self.queue.send(item);
    }
}

/// See [`Record::pickers`].
#[derive(Debug, Default)]
pub(crate) struct Pickers {
    pub announced: bool,
    pub with_models: bool,
}

/// What the ordered path needs besides its record.
pub(crate) struct PathParts {
    pub out: FrameSender,
    pub tools: Arc<dyn ToolRegistry>,
    pub outgoing: Arc<OutgoingTable>,
    /// Follows the error of a turn the model server refused as unauthorised.
    pub auth_hint: Option<Arc<str>>,
    /// The model's prices, for the session's cost in usage updates.
    pub prices: Option<Arc<dsh_llm::Prices>>,
}

/// Runs the ordered path of `record` until its queue closes.
pub(crate) async fn ordered_path(
    record: Arc<Record>,
    mut items: mpsc::UnboundedReceiver<Item>,
    parts: PathParts,
) {
    let mut live = Renderer::new(record.id.clone());
    while let Some(item) = items.recv().await {
        match item {
            Item::Event(event) => {
                let decoded = match LogRecord::decode(&event) {
                    Ok(decoded) => decoded,
                    Err(err) => {
                        tracing::warn!(session = %record.id, "not rendered: {err}");
                        continue;
                    }
                };
                if !bound(&record, &decoded) {
                    continue;
                }
                let updates = {
                    let asks = |tool: &str, args: &Value| asks(&parts, &record, tool, args);
                    let cx = context(&record, &parts, RenderMode::Live, &asks);
                    live.render_record(decoded, event.time, &cx)
                };
                send_updates(&parts.out, &record.id, updates).await;
            }
            Item::Permission {
                turn,
                step,
                call_id,
                tool,
                preview,
                reply,
            } => {
                let open = record
                    .inflight
                    .lock()
                    .as_ref()
                    .is_some_and(|f| f.turn == Some(turn));
                let announced = live.announced(turn, step, &call_id).filter(|_| open);
                // A gate that stopped waiting (its turn was cancelled) closed `reply`.
                let Some(call) = announced.filter(|_| !reply.is_closed()) else {
                    let _ = reply.send(None);
                    continue;
                };
                let (id, answer) = parts.outgoing.register();
                let request = permission_request(&record.id, &tool, call, preview, &record.cwd);
                parts
                    .out
                    .send(request_frame(id, "session/request_permission", request))
                    .await;
                // The gate may have given up while the question was being written: then
                // nobody will withdraw it but this path.
                if reply.send(Some((id, answer))).is_err() {
                    withdraw(&parts.outgoing, &parts.out, id);
                }
            }
            Item::Commands => {
                let update = crate::render::commands_update(&record.commands);
                send_updates(&parts.out, &record.id, vec![update]).await;
            }
            Item::Update(update) => send_updates(&parts.out, &record.id, vec![*update]).await,
            Item::Notice(title) => {
                let notice = Notice::new(NoticeSeverity::Warning, title);
                send_updates(&parts.out, &record.id, vec![SessionUpdate::Notice(notice)]).await;
            }
            Item::Progress(piece) => {
                let updates = live.progress(piece);
                send_updates(&parts.out, &record.id, updates).await;
            }
            Item::Compacting(compacting) => {
                // Like the events: only a compaction in the turn of the open prompt. A
                // `/compact` prompt's turn has no message: its notice binds it.
                let open = {
                    let mut inflight = record.inflight.lock();
                    match inflight.as_mut() {
                        Some(open) => {
                            if open.turn.is_none()
                                && compacting.request.as_ref() == Some(&open.message_id)
                            {
                                open.turn = Some(compacting.turn);
                            }
                            open.turn == Some(compacting.turn)
                        }
                        None => false,
                    }
                };
                if !open {
                    continue;
                }
                let updates = compacting_updates(&compacting, record.caps);
                send_updates(&parts.out, &record.id, updates).await;
            }
            Item::Allowed {
                turn,
                step,
                call_id,
            } => {
                if let Some(call) = live.announced(turn, step, &call_id)
                    && live.start(&call.tool_call_id)
                {
                    let update = ToolCallUpdate::new(
                        ToolCallId::new(call.tool_call_id.as_str()),
                        ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                    );
                    send_updates(
                        &parts.out,
                        &record.id,
                        vec![SessionUpdate::ToolCallUpdate(update)],
                    )
                    .await;
                }
            }
            Item::Settle {
                message_id,
                outcome,
            } => {
                let settled = {
                    let mut inflight = record.inflight.lock();
                    match inflight.as_ref() {
                        Some(open) if open.message_id == message_id => inflight.take(),
                        _ => None,
                    }
                };
                let Some(prompt) = settled else { continue };
                let closures = match prompt.turn {
                    Some(turn) => live.close_turn(Some(turn)),
                    None => Vec::new(),
                };
                send_updates(&parts.out, &record.id, closures).await;
                let answer = match &outcome {
                    None => {
                        tracing::warn!(
                            session = %record.id,
                            "the turn did not stop within the cancel grace; answered cancelled"
                        );
                        Ok(json!({"stopReason": "cancelled"}))
                    }
                    Some(outcome) => match stop_reason(
                        outcome,
                        prompt.cancel_requested,
                        parts.auth_hint.as_deref(),
                    ) {
                        Ok(reason) => {
                            tracing::info!(session = %record.id, stop = ?reason, "prompt settled");
                            Ok(json!({"stopReason": reason}))
                        }
                        Err(error) => Err(error),
                    },
                };
                prompt.reply.answer(answer).await;
                // Only now: teardown waits for this, then flushes, so the response must
                // already be queued.
                let _ = record.idle.send_replace(true);
            }
            Item::Replay {
                events,
                done,
                silent,
            } => {
                let replayed = replay(&record, &parts, &events, silent).await;
                live.carry_on(&replayed);
                let _ = done.send(());
            }
        }
    }
}

/// Whether an event belongs to the open prompt's turn; binds the prompt to its turn when
/// its `user/message` goes by.
fn bound(record: &Record, event: &LogRecord) -> bool {
    // A title is the session's, not a turn's: the editor's history wants it however it came.
    if let LogRecord::Title(_) = event {
        return true;
    }
    let mut inflight = record.inflight.lock();
    let Some(open) = inflight.as_mut() else {
        return false;
    };
    let Some(turn) = event.turn() else {
        return false;
    };
    if open.turn.is_none()
        && let LogRecord::UserMessage(user) = event
        && user.message.id == open.message_id
    {
        open.turn = Some(turn);
    }
    open.turn == Some(turn)
}

fn asks(parts: &PathParts, record: &Record, tool: &str, args: &Value) -> bool {
    let roots = Roots::new(record.cwd.clone(), Vec::new());
    parts
        .tools
        .get(tool)
        .is_some_and(|t| record.mode.lock().asks(t.effect(args, &roots)))
        && !record.grants.always.lock().contains(tool)
}

fn context<'a>(
    record: &'a Record,
    parts: &'a PathParts,
    mode: RenderMode,
    asks: &'a (dyn Fn(&str, &Value) -> bool + Sync),
) -> RenderContext<'a> {
    RenderContext {
        mode,
        caps: record.caps,
        cwd: &record.cwd,
        tools: &*parts.tools,
        asks,
        prices: parts.prices.as_deref(),
    }
}

/// The stored history through a fresh renderer, with adjacent text (and thought) chunks of
/// a step joined, so a long session loads in proportion to its messages. Returns the
/// renderer, whose ring the live one goes on from.
async fn replay(
    record: &Record,
    parts: &PathParts,
    events: &[Arc<SessionEvent>],
    silent: bool,
) -> Renderer {
    const JOIN_LIMIT: usize = 1024 * 1024;
    let mut renderer = Renderer::new(record.id.clone());
    let never = |_: &str, _: &Value| false;
    let cx = context(record, parts, RenderMode::Replay, &never);
    let mut pending: Vec<SessionUpdate> = Vec::new();
    for event in events {
        for update in renderer.render(event, &cx) {
            match (pending.last_mut(), &update) {
                (
                    Some(SessionUpdate::AgentMessageChunk(last)),
                    SessionUpdate::AgentMessageChunk(next),
                )
                | (
                    Some(SessionUpdate::AgentThoughtChunk(last)),
                    SessionUpdate::AgentThoughtChunk(next),
                ) if joinable(last, next, JOIN_LIMIT) => {
                    join(last, next);
                }
                _ => pending.push(update),
            }
        }
        if event.kind.as_str() == EventType::STEP_END {
            let step = std::mem::take(&mut pending);
            if !silent {
                send_updates(&parts.out, &record.id, step).await;
            }
        }
    }
    pending.extend(renderer.close_turn(None));
    if !silent {
        send_updates(&parts.out, &record.id, pending).await;
    }
    renderer
}

fn text_of(chunk: &agent_client_protocol_schema::v1::ContentChunk) -> Option<&str> {
    match &chunk.content {
        agent_client_protocol_schema::v1::ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    }
}

fn joinable(
    last: &agent_client_protocol_schema::v1::ContentChunk,
    next: &agent_client_protocol_schema::v1::ContentChunk,
    limit: usize,
) -> bool {
    matches!((text_of(last), text_of(next)), (Some(a), Some(b)) if a.len() + b.len() <= limit)
}

fn join(
    last: &mut agent_client_protocol_schema::v1::ContentChunk,
    next: &agent_client_protocol_schema::v1::ContentChunk,
) {
    if let (agent_client_protocol_schema::v1::ContentBlock::Text(a), Some(b)) =
        (&mut last.content, text_of(next))
    {
        a.text.push_str(b);
    }
}

async fn send_updates(out: &FrameSender, id: &SessionId, updates: Vec<SessionUpdate>) {
    for update in updates {
        let notification = SessionNotification::new(id.as_str().to_owned(), update);
        out.send(crate::rpc::notification_frame(
            "session/update",
            &notification,
        ))
        .await;
    }
}

fn permission_request(
    id: &SessionId,
    tool: &str,
    call: crate::render::Announced,
    preview: Option<ToolResultView>,
    cwd: &std::path::Path,
) -> Value {
    let options = vec![
        PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            "allow_always",
            format!("Always allow {tool} in this session"),
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let mut content = call.content;
    let mut fields = ToolCallUpdateFields::new()
        .title(call.title)
        .kind(call.kind)
        .status(ToolCallStatus::Pending)
        .raw_input(call.raw_input);
    // The question shows what the call would change, as the finished card will.
    if let Some(ToolResultView::Diff {
        path,
        old_text,
        new_text,
        first_line,
        created,
        summary: _,
    }) = preview
    {
        let (diff, location) =
            crate::render::diff_card(cwd, path, old_text, new_text, first_line, created);
        content.push(diff);
        fields = fields.locations(vec![location]);
    }
    let tool_call = ToolCallUpdate::new(
        ToolCallId::new(call.tool_call_id.as_str()),
        fields.content(content),
    );
    json!({
        "sessionId": id.as_str(),
        "toolCall": tool_call,
        "options": options,
    })
}
