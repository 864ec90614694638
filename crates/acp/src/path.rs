//! The session's ordered path.
//!
//! Every frame about one session — its live updates, its permission requests, its prompt's
//! response and its load replay — is produced by one task reading one queue. That single
//! path is what makes the ordering promises hold: a `tool_call` precedes the permission
//! request naming it, and a prompt's response follows every update of its turn. Each kind
//! of item is one method of [`OrderedPath`].

mod children;
pub(crate) mod trust;

use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    Notice, NoticeSeverity, PermissionOption, PermissionOptionKind, RequestPermissionRequest,
    SessionNotification, SessionUpdate, StopReason, ToolCallId, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use dsh_agent::record::Record as LogRecord;
use dsh_agent::record::{CompactingRecord, ToolProgressRecord};
use dsh_agent::{MessageId, TurnOutcome};
use dsh_session::{EventType, SessionEvent, SessionId};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{Roots, ToolRegistry, ToolResultView};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::live_session::{LiveSession, stopped};
use crate::outgoing::{Answer, OutgoingTable};
use crate::render::{RenderContext, RenderMode, Renderer, compacting_updates};
use crate::rpc::request_frame;
use crate::stop::stop_reason;
use crate::transport::FrameSender;

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
        /// The asking agent's session: this one, or a child's.
        session: SessionId,
        /// The child's label when a child asks.
        subagent: Option<String>,
        turn: u32,
        step: u32,
        call_id: String,
        /// What the call would change (an edit's diff), shown in the question.
        preview: Option<ToolResultView>,
        /// What "always" would allow, in words; `None`: "always" is not offered.
        always: Option<String>,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    },
    /// An asked-about call was allowed: it is now running.
    Allowed {
        session: SessionId,
        turn: u32,
        step: u32,
        call_id: String,
    },
    /// A child agent was started by a call of this session or of one of its children; its
    /// events before `earlier` was read came with it.
    ChildCreated {
        header: Box<dsh_session::SessionHeader>,
        earlier: Vec<Arc<SessionEvent>>,
    },
    /// An event a child agent's session published.
    ChildEvent {
        session: SessionId,
        event: Arc<SessionEvent>,
    },
    /// A child's running call's output.
    ChildProgress {
        session: SessionId,
        piece: ToolProgressRecord,
    },
    /// The prompt's ticket resolved (`None`: the cancel grace ran out first).
    Settle {
        message_id: MessageId,
        outcome: Option<TurnOutcome>,
    },
    /// Ask whether to trust a project's hook file: send the question, hand back its id and
    /// answer.
    TrustHooks {
        file: dsh_hooks::ProjectFile,
        card: String,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    },
    /// Replay these events for `session/load`, then acknowledge.
    Replay {
        events: Arc<[Arc<SessionEvent>]>,
        /// The stored children to replay as sessions of their own (a client that shows
        /// them), after the session's own events.
        children: Vec<StoredChild>,
        done: oneshot::Sender<()>,
        /// Render without sending (`session/resume`): the live renderer still goes on from
        /// the session's figures.
        silent: bool,
    },
}

/// A child agent's stored session, for a load's replay.
pub(crate) struct StoredChild {
    pub header: dsh_session::SessionHeader,
    pub events: Arc<[Arc<SessionEvent>]>,
}

/// What the ordered path needs besides its session.
pub(crate) struct PathParts {
    pub out: FrameSender,
    pub tools: Arc<dyn ToolRegistry>,
    pub outgoing: Arc<OutgoingTable>,
    /// Follows the error of a turn the model server refused as unauthorised.
    pub auth_hint: Option<Arc<str>>,
    /// The model's prices, for the session's cost in usage updates.
    pub prices: Option<Arc<dsh_llm::Prices>>,
}

/// One session's path: its live renderer and what it sends with.
pub(crate) struct OrderedPath {
    session: Arc<LiveSession>,
    parts: PathParts,
    live: Renderer,
    /// The child agents its calls started, followed here.
    children: children::Children,
}

impl OrderedPath {
    pub(crate) fn new(session: Arc<LiveSession>, parts: PathParts) -> OrderedPath {
        let live = Renderer::new(session.id.clone());
        OrderedPath {
            session,
            parts,
            live,
            children: children::Children::default(),
        }
    }

    /// Runs until the queue closes.
    pub(crate) async fn run(mut self, mut items: mpsc::UnboundedReceiver<Item>) {
        while let Some(item) = items.recv().await {
            match item {
                Item::Event(event) => self.event(&event).await,
                Item::Permission {
                    session,
                    subagent,
                    turn,
                    step,
                    call_id,
                    preview,
                    always,
                    reply,
                } => {
                    let asked = Asked {
                        session,
                        subagent,
                        turn,
                        step,
                        call_id,
                        preview,
                        always,
                    };
                    self.permission(asked, reply).await;
                }
                Item::Commands => {
                    let update = crate::render::commands_update(&self.session.commands);
                    self.send(vec![update]).await;
                }
                Item::Update(update) => self.send(vec![*update]).await,
                Item::Notice(title) => {
                    let notice = Notice::new(NoticeSeverity::Warning, title);
                    self.send(vec![SessionUpdate::Notice(notice)]).await;
                }
                Item::Progress(piece) => {
                    let updates = self.live.progress(piece);
                    self.send(updates).await;
                }
                Item::Compacting(note) => {
                    // Like the events: only a compaction in the turn of the open prompt.
                    if self.session.prompt.bind_compaction(&note) {
                        self.send(compacting_updates(&note, self.session.caps))
                            .await;
                    }
                }
                Item::Allowed {
                    session,
                    turn,
                    step,
                    call_id,
                } if session == self.session.id => self.allowed(turn, step, &call_id).await,
                Item::Allowed {
                    session,
                    turn,
                    step,
                    call_id,
                } => self.child_allowed(&session, turn, step, &call_id).await,
                Item::ChildCreated { header, earlier } => {
                    self.child_created(&header, &earlier).await
                }
                Item::ChildEvent { session, event } => self.child_event(&session, &event).await,
                Item::ChildProgress { session, piece } => {
                    self.child_progress(&session, piece).await
                }
                Item::Settle {
                    message_id,
                    outcome,
                } => self.settle(&message_id, outcome).await,
                Item::TrustHooks { file, card, reply } => self.ask_trust(&file, &card, reply).await,
                Item::Replay {
                    events,
                    children,
                    done,
                    silent,
                } => {
                    self.link_stored(&events, &children);
                    let replayed = self.replay(&events, silent).await;
                    self.live.carry_on(&replayed);
                    for child in &children {
                        self.replay_child(&events, child).await;
                    }
                    let _ = done.send(());
                }
            }
        }
    }

    /// A stored event of the open prompt's turn, as the client sees it live.
    async fn event(&mut self, event: &SessionEvent) {
        let decoded = match LogRecord::decode(event) {
            Ok(decoded) => decoded,
            Err(err) => {
                tracing::warn!(session = %self.session.id, "not rendered: {err}");
                return;
            }
        };
        if !self.session.prompt.bind(&decoded) {
            return;
        }
        let updates = {
            let (session, parts) = (&self.session, &self.parts);
            let asks = |tool: &str, args: &Value| asks(parts, session, tool, args);
            let cx = context(session, parts, RenderMode::Live, &asks);
            self.live.render_record(decoded, event.time, &cx)
        };
        let updates = self.linked(&self.session.id, updates);
        self.send(updates).await;
    }

    /// The gate asks about an announced call of the open turn: the request goes out after
    /// the call's card, and its id and answer go back to the gate.
    async fn permission(&mut self, asked: Asked, reply: oneshot::Sender<Option<(i64, Answer)>>) {
        if asked.session != self.session.id {
            return self.child_permission(asked, reply).await;
        }
        let announced = self
            .live
            .announced(asked.turn, asked.step, &asked.call_id)
            .filter(|_| self.session.prompt.in_turn(asked.turn));
        // A gate that stopped waiting (its turn was cancelled) closed `reply`.
        let Some(call) = announced.filter(|_| !reply.is_closed()) else {
            let _ = reply.send(None);
            return;
        };
        // Announced as running (a hook of the user's asks about a call the mode would not
        // have): the card goes back to waiting before the question names it.
        if self.live.hold(&call.tool_call_id) {
            let update = ToolCallUpdate::new(
                ToolCallId::new(call.tool_call_id.as_str()),
                ToolCallUpdateFields::new().status(ToolCallStatus::Pending),
            );
            self.send(vec![SessionUpdate::ToolCallUpdate(update)]).await;
        }
        let request = permission_request(&self.session.id, &self.session.cwd, &asked, call);
        self.ask(request, reply).await;
    }

    /// Sends a permission request and hands its id and answer to whoever waits for it.
    async fn ask(
        &self,
        request: RequestPermissionRequest,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    ) {
        let (id, answer) = self.parts.outgoing.register();
        self.parts
            .out
            .send(request_frame(id, "session/request_permission", &request))
            .await;
        // The gate may have given up while the question was being written: then nobody will
        // withdraw it but this path.
        if reply.send(Some((id, answer))).is_err() {
            self.parts.outgoing.withdraw(&self.parts.out, id);
        }
    }

    /// An asked call was allowed: its card goes from pending to running.
    async fn allowed(&mut self, turn: u32, step: u32, call_id: &str) {
        if let Some(call) = self.live.announced(turn, step, call_id)
            && self.live.start(&call.tool_call_id)
        {
            let update = ToolCallUpdate::new(
                ToolCallId::new(call.tool_call_id.as_str()),
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            );
            self.send(vec![SessionUpdate::ToolCallUpdate(update)]).await;
        }
    }

    /// The prompt's turn ended (or its cancel grace did): its open cards close, then it is
    /// answered with why its turn stopped.
    async fn settle(&mut self, message_id: &MessageId, outcome: Option<TurnOutcome>) {
        let Some(prompt) = self.session.prompt.settle(message_id) else {
            return;
        };
        let closures = match prompt.turn {
            Some(turn) => self.live.close_turn(Some(turn)),
            None => Vec::new(),
        };
        self.send(closures).await;
        let id = &self.session.id;
        let answer = match &outcome {
            None => {
                tracing::warn!(
                    session = %id,
                    "the turn did not stop within the cancel grace; answered cancelled"
                );
                stopped(StopReason::Cancelled)
            }
            Some(outcome) => match stop_reason(
                outcome,
                prompt.cancel_requested,
                self.parts.auth_hint.as_deref(),
            ) {
                Ok(reason) => {
                    tracing::info!(session = %id, stop = ?reason, "prompt settled");
                    stopped(reason)
                }
                Err(error) => Err(error),
            },
        };
        prompt.reply.answer(answer).await;
        self.session.prompt.settled();
    }

    /// The stored history through a fresh renderer, with adjacent text (and thought) chunks
    /// of a step joined, so a long session loads in proportion to its messages. Returns the
    /// renderer, whose figures the live one goes on from.
    async fn replay(&mut self, events: &[Arc<SessionEvent>], silent: bool) -> Renderer {
        const JOIN_LIMIT: usize = 1024 * 1024;
        let mut renderer = Renderer::new(self.session.id.clone());
        if silent {
            // Nothing is sent: only the figures the live renderer goes on from are needed.
            renderer.set_prices(self.parts.prices.as_deref());
            for event in events {
                renderer.account(event);
            }
            return renderer;
        }
        let mut pending: Vec<SessionUpdate> = Vec::new();
        for event in events {
            let updates = {
                let never = |_: &str, _: &Value| false;
                let cx = context(&self.session, &self.parts, RenderMode::Replay, &never);
                renderer.render(event, &cx)
            };
            for update in updates {
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
                let step = self.linked(&self.session.id, step);
                self.send(step).await;
            }
        }
        pending.extend(renderer.close_turn(None));
        let pending = self.linked(&self.session.id, pending);
        self.send(pending).await;
        renderer
    }

    async fn send(&self, updates: Vec<SessionUpdate>) {
        send_updates(&self.parts.out, &self.session.id, updates).await;
    }
}

/// What the gate asks about.
pub(crate) struct Asked {
    /// The asking agent's session.
    pub session: SessionId,
    /// A child's label, when a child asks.
    pub subagent: Option<String>,
    turn: u32,
    step: u32,
    call_id: String,
    preview: Option<ToolResultView>,
    always: Option<String>,
}

fn asks(parts: &PathParts, session: &LiveSession, tool: &str, args: &Value) -> bool {
    let roots = Roots::new(session.cwd.clone(), Vec::new());
    let mode = *session.mode.lock();
    parts.tools.get(tool).is_some_and(|t| {
        session
            .grants
            .asks(mode, t.effect(args, &roots), tool, args, &roots)
    })
}

fn context<'a>(
    session: &'a LiveSession,
    parts: &'a PathParts,
    mode: RenderMode,
    asks: &'a (dyn Fn(&str, &Value) -> bool + Sync),
) -> RenderContext<'a> {
    RenderContext {
        mode,
        caps: session.caps,
        cwd: &session.cwd,
        tools: &*parts.tools,
        asks,
        prices: parts.prices.as_deref(),
    }
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

pub(crate) async fn send_updates(out: &FrameSender, id: &SessionId, updates: Vec<SessionUpdate>) {
    for update in updates {
        let notification = SessionNotification::new(id.as_str().to_owned(), update);
        out.send(crate::rpc::notification_frame(
            "session/update",
            &notification,
        ))
        .await;
    }
}

/// The question about an announced call: its card as announced (and what it would change),
/// with the three answers.
fn permission_request(
    session: &SessionId,
    cwd: &std::path::Path,
    asked: &Asked,
    call: crate::render::Announced,
) -> RequestPermissionRequest {
    let mut options = vec![PermissionOption::new(
        "allow_once",
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    if let Some(always) = &asked.always {
        options.push(PermissionOption::new(
            "allow_always",
            format!("Always allow {} in this project", SafeText::plain(always)),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        "reject_once",
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    let mut content = call.content;
    let mut fields = ToolCallUpdateFields::new()
        .title(call.title)
        .kind(call.kind)
        .status(ToolCallStatus::Pending)
        .raw_input(call.raw_input);
    // The question shows what the call would change, as the finished card will.
    let diff = asked
        .preview
        .as_ref()
        .and_then(|view| crate::render::diff_card(cwd, view));
    if let Some((diff, location)) = diff {
        content.push(diff);
        fields = fields.locations(vec![location]);
    }
    let tool_call = ToolCallUpdate::new(
        ToolCallId::new(call.tool_call_id.as_str()),
        fields.content(content),
    );
    RequestPermissionRequest::new(session.as_str().to_owned(), tool_call, options)
}
