//! Child agents on their root session's path. A child's events, its questions and its end
//! are items of the path of the session the client opened, so they keep the order the
//! client must see: a child is announced (`subagent_update`) before any of its traffic, and
//! its work comes before the parent's prompt is answered (the parent's call waits for it).
//!
//! To a client that advertised `subagents` a child is a session of its own: announced on
//! its immediate parent, its updates under its own id, its permission questions naming its
//! session, its end an `idle` state with its stop reason, and the task's card links it. To
//! any other client, its work is lines in the task's card (its calls, one line each), and a
//! call it asks about is announced in the parent's session as a card of its own, titled with
//! the child's label, which the question names and the child's updates of that call follow.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ErrorStopReason, IdleStateUpdate, IdleStopReason, RunningStateUpdate,
    SessionCancelCapabilities, SessionReference, SessionUpdate, StateUpdate,
    SubagentSessionCapabilities, SubagentUpdate, ToolCall, ToolCallContent, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use dsh_agent::record::{Record as LogRecord, ToolProgressRecord};
use dsh_session::{EventType, SessionEvent, SessionHeader, SessionId, TurnEndReason};
use dsh_tools::safe_text::SafeText;
use serde_json::Value;
use tokio::sync::oneshot;

use super::{Asked, OrderedPath, StoredChild, asks, context, permission_request, send_updates};
use crate::outgoing::Answer;
use crate::render::{RenderMode, Renderer};

/// The most lines a task card shows of its child's work: the latest.
const SHOWN_LINES: usize = 12;

/// One child agent followed on the path.
pub(super) struct Child {
    /// The session whose call started it.
    parent: SessionId,
    /// The card the child's work shows under for a client that shows no child sessions:
    /// the task's card in the session the client opened (a grandchild's is its ancestor's).
    card: Option<String>,
    /// What it does, in a few words; safe.
    label: String,
    cwd: PathBuf,
    /// Its session as updates (sent to a client that shows child sessions; else kept for
    /// the questions about its calls).
    render: Renderer,
    /// Its work as lines, for a client that does not.
    lines: Vec<String>,
    /// For such a client: the child's cards asked about, each announced in the parent's
    /// session under the id given here.
    proxies: HashMap<String, String>,
}

/// The children of one path, and which parent cards link a child (for a client that shows
/// child sessions).
#[derive(Default)]
pub(super) struct Children {
    by_id: HashMap<SessionId, Child>,
    links: HashMap<(SessionId, String), SessionId>,
}

impl OrderedPath {
    fn subagents(&self) -> bool {
        self.session.caps.subagents
    }

    /// A child was started: announced to a client that shows child sessions, then its
    /// earlier events.
    pub(super) async fn child_created(
        &mut self,
        header: &SessionHeader,
        earlier: &[Arc<SessionEvent>],
    ) {
        let (Some(parent), Some(call_id)) = (&header.parent, &header.parent_call) else {
            return;
        };
        let found = if *parent == self.session.id {
            Some((self.live.card_of_call(call_id), None))
        } else {
            self.children
                .by_id
                .get(parent)
                .map(|up| (up.render.card_of_call(call_id), up.card.clone()))
        };
        let Some((card, ancestor_card)) = found else {
            return;
        };
        let (own_card, title, label) = match card {
            Some((id, title, label)) => (Some(id), title, label),
            None => (None, String::new(), "subagent".to_owned()),
        };
        let child = Child {
            parent: parent.clone(),
            // Without child sessions, a grandchild's lines go where its parent's go.
            card: match *parent == self.session.id {
                true => own_card.clone(),
                false => ancestor_card,
            },
            label: SafeText::plain(&label),
            cwd: PathBuf::from(&header.cwd),
            render: Renderer::new(header.id.clone()),
            lines: Vec::new(),
            proxies: HashMap::new(),
        };
        if self.subagents() {
            let cancel =
                SubagentSessionCapabilities::new().cancel(SessionCancelCapabilities::new());
            let announce = SubagentUpdate::new(header.id.as_str().to_owned())
                .title(child.label.clone())
                .description(SafeText::plain(&title))
                .cwd(child.cwd.clone())
                .capabilities(cancel)
                .state(StateUpdate::Running(RunningStateUpdate::new()));
            let mut updates = vec![SessionUpdate::SubagentUpdate(announce)];
            if let Some(card) = &own_card {
                self.children
                    .links
                    .insert((parent.clone(), card.clone()), header.id.clone());
                updates.push(link(card, &header.id));
            }
            send_updates(&self.parts.out, parent, updates).await;
        }
        self.children.by_id.insert(header.id.clone(), child);
        for event in earlier {
            self.child_event(&header.id, event).await;
        }
    }

    /// One event of a child's session.
    pub(super) async fn child_event(&mut self, session: &SessionId, event: &SessionEvent) {
        let subagents = self.subagents();
        let (updates, lines) = {
            let Some(child) = self.children.by_id.get_mut(session) else {
                return;
            };
            let (path, parts) = (&self.session, &self.parts);
            let asks = |tool: &str, args: &Value| asks(parts, path, tool, args);
            let mut cx = context(path, parts, RenderMode::Live, &asks);
            cx.cwd = &child.cwd;
            child.render.render_child(event, &cx)
        };
        if subagents {
            let updates = self.linked(session, updates);
            send_updates(&self.parts.out, session, updates).await;
        } else {
            self.proxied(session, updates).await;
            if !lines.is_empty() {
                self.show_lines(session, lines).await;
            }
        }
        if subagents
            && event.kind.as_str() == EventType::TURN_END
            && let Ok(LogRecord::TurnEnd(end)) = LogRecord::decode(event)
            && let Some(child) = self.children.by_id.get(session)
        {
            let idle = IdleStateUpdate::new().stop_reason(idle_reason(&end.reason));
            let update =
                SubagentUpdate::new(session.as_str().to_owned()).state(StateUpdate::Idle(idle));
            let parent = child.parent.clone();
            let updates = vec![SessionUpdate::SubagentUpdate(update)];
            send_updates(&self.parts.out, &parent, updates).await;
        }
    }

    /// A child's running output, to a client that shows its session.
    pub(super) async fn child_progress(&mut self, session: &SessionId, piece: ToolProgressRecord) {
        if !self.subagents() {
            return;
        }
        let Some(child) = self.children.by_id.get_mut(session) else {
            return;
        };
        let updates = child.render.progress(piece);
        send_updates(&self.parts.out, session, updates).await;
    }

    /// `updates` of `session` with each card that started a child linking the child's
    /// session first, so the link stays when the card's content is replaced (by its result).
    pub(super) fn linked(
        &self,
        session: &SessionId,
        mut updates: Vec<SessionUpdate>,
    ) -> Vec<SessionUpdate> {
        if self.children.links.is_empty() {
            return updates;
        }
        for update in &mut updates {
            if let SessionUpdate::ToolCallUpdate(update) = update
                && let Some(content) = &mut update.fields.content
                && let Some(child) = self
                    .children
                    .links
                    .get(&(session.clone(), update.tool_call_id.0.to_string()))
            {
                let reference = SessionReference::new(child.as_str().to_owned());
                content.insert(0, ToolCallContent::Session(reference));
            }
        }
        updates
    }

    /// For a client without child sessions: the child's updates of the calls it asked about,
    /// sent on the parent's session under their proxies' ids.
    async fn proxied(&mut self, session: &SessionId, updates: Vec<SessionUpdate>) {
        let Some(child) = self.children.by_id.get(session) else {
            return;
        };
        if child.proxies.is_empty() {
            return;
        }
        let forwarded: Vec<SessionUpdate> = updates
            .into_iter()
            .filter_map(|update| match update {
                SessionUpdate::ToolCallUpdate(mut update) => {
                    let proxy = child.proxies.get(update.tool_call_id.0.as_ref())?;
                    update.tool_call_id = ToolCallId::new(proxy.as_str());
                    Some(SessionUpdate::ToolCallUpdate(update))
                }
                _ => None,
            })
            .collect();
        let root = self.session.id.clone();
        send_updates(&self.parts.out, &root, forwarded).await;
    }

    /// The child's latest lines as its task card's content.
    async fn show_lines(&mut self, session: &SessionId, lines: Vec<String>) {
        let Some(child) = self.children.by_id.get_mut(session) else {
            return;
        };
        let Some(card) = child.card.clone() else {
            return;
        };
        for line in lines {
            child.lines.push(format!("↳ {} · {line}", child.label));
        }
        // A grandchild's lines join its ancestor's on the same card.
        let mut shown: Vec<&str> = self
            .children
            .by_id
            .values()
            .filter(|c| c.card.as_deref() == Some(card.as_str()))
            .flat_map(|c| c.lines.iter().map(String::as_str))
            .collect();
        let skip = shown.len().saturating_sub(SHOWN_LINES);
        shown.drain(..skip);
        let text = shown.join("\n");
        let content = vec![ToolCallContent::from(ContentBlock::from(text))];
        let update = ToolCallUpdate::new(
            ToolCallId::new(card.as_str()),
            ToolCallUpdateFields::new().content(content),
        );
        let root = self.session.id.clone();
        let updates = vec![SessionUpdate::ToolCallUpdate(update)];
        send_updates(&self.parts.out, &root, updates).await;
    }

    /// A child asks about one of its calls: in the child's session to a client that shows
    /// it, else on the task's card, the question naming the child.
    pub(super) async fn child_permission(
        &mut self,
        asked: Asked,
        reply: oneshot::Sender<Option<(i64, Answer)>>,
    ) {
        let subagents = self.subagents();
        let found = self.children.by_id.get(&asked.session).and_then(|child| {
            let call = child
                .render
                .announced(asked.turn, asked.step, &asked.call_id)?;
            Some((
                child.cwd.clone(),
                child.card.clone(),
                child.label.clone(),
                call,
            ))
        });
        let Some((cwd, card, label, mut call)) = found.filter(|_| !reply.is_closed()) else {
            let _ = reply.send(None);
            return;
        };
        let on = match (subagents, card) {
            (true, _) => {
                // Announced as running (a hook asks after all): back to waiting first.
                let held = self
                    .children
                    .by_id
                    .get_mut(&asked.session)
                    .is_some_and(|child| child.render.hold(&call.tool_call_id));
                if held {
                    let update = ToolCallUpdate::new(
                        ToolCallId::new(call.tool_call_id.as_str()),
                        ToolCallUpdateFields::new().status(ToolCallStatus::Pending),
                    );
                    let updates = vec![SessionUpdate::ToolCallUpdate(update)];
                    send_updates(&self.parts.out, &asked.session, updates).await;
                }
                asked.session.clone()
            }
            (false, Some(card)) => {
                // The client knows only the parent's session: the call is announced there,
                // under the task's card's id, titled with the child's label.
                let who = asked
                    .subagent
                    .as_deref()
                    .map(SafeText::plain)
                    .unwrap_or(label);
                let proxy = format!("{card}/{}", call.tool_call_id);
                call.title = format!("Subagent \u{201c}{who}\u{201d}: {}", call.title);
                let announce = ToolCall::new(ToolCallId::new(proxy.as_str()), call.title.clone())
                    .kind(call.kind)
                    .status(ToolCallStatus::Pending)
                    .content(call.content.clone())
                    .raw_input(call.raw_input.clone());
                if let Some(child) = self.children.by_id.get_mut(&asked.session) {
                    child.proxies.insert(
                        std::mem::replace(&mut call.tool_call_id, proxy.clone()),
                        proxy,
                    );
                }
                let root = self.session.id.clone();
                send_updates(
                    &self.parts.out,
                    &root,
                    vec![SessionUpdate::ToolCall(announce)],
                )
                .await;
                root
            }
            (false, None) => {
                let _ = reply.send(None);
                return;
            }
        };
        let request = permission_request(&on, &cwd, &asked, call);
        self.ask(request, reply).await;
    }

    /// A child's asked call was allowed: its card runs now, in its session.
    pub(super) async fn child_allowed(
        &mut self,
        session: &SessionId,
        turn: u32,
        step: u32,
        call_id: &str,
    ) {
        let subagents = self.subagents();
        let Some(child) = self.children.by_id.get_mut(session) else {
            return;
        };
        if let Some(call) = child.render.announced(turn, step, call_id)
            && child.render.start(&call.tool_call_id)
        {
            // In the child's session, or its proxy in the parent's.
            let (on, id) = match child.proxies.get(&call.tool_call_id) {
                Some(proxy) if !subagents => (self.session.id.clone(), proxy.clone()),
                Some(_) | None => (session.clone(), call.tool_call_id),
            };
            let update = ToolCallUpdate::new(
                ToolCallId::new(id.as_str()),
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            );
            if subagents || on != *session {
                let updates = vec![SessionUpdate::ToolCallUpdate(update)];
                send_updates(&self.parts.out, &on, updates).await;
            }
        }
    }
}

impl OrderedPath {
    /// Before a load's replay: the cards that started the stored children link them.
    pub(super) fn link_stored(&mut self, events: &[Arc<SessionEvent>], children: &[StoredChild]) {
        for child in children {
            if let Some((card, _)) = stored_card(events, child, &*self.parts.tools) {
                self.children
                    .links
                    .insert((self.session.id.clone(), card), child.header.id.clone());
            }
        }
    }

    /// A stored child as a session of its own: announced (idle, with how it ended), then its
    /// history.
    pub(super) async fn replay_child(&mut self, events: &[Arc<SessionEvent>], child: &StoredChild) {
        let id = &child.header.id;
        let label = stored_card(events, child, &*self.parts.tools)
            .map(|(_, label)| label)
            .unwrap_or_else(|| "subagent".to_owned());
        let ended = child
            .events
            .iter()
            .rev()
            .find_map(|event| match LogRecord::decode(event) {
                Ok(LogRecord::TurnEnd(end)) => Some(end.reason),
                Ok(_) | Err(_) => None,
            });
        let mut announce = SubagentUpdate::new(id.as_str().to_owned())
            .title(label)
            .cwd(PathBuf::from(&child.header.cwd));
        if let Some(reason) = &ended {
            let idle = IdleStateUpdate::new().stop_reason(idle_reason(reason));
            announce = announce.state(StateUpdate::Idle(idle));
        }
        let root = self.session.id.clone();
        send_updates(
            &self.parts.out,
            &root,
            vec![SessionUpdate::SubagentUpdate(announce)],
        )
        .await;
        let mut renderer = Renderer::new(id.clone());
        let mut updates = Vec::new();
        for event in child.events.iter() {
            let never = |_: &str, _: &Value| false;
            let mut cx = context(&self.session, &self.parts, RenderMode::Replay, &never);
            let cwd = PathBuf::from(&child.header.cwd);
            cx.cwd = &cwd;
            updates.extend(renderer.render(event, &cx));
        }
        updates.extend(renderer.close_turn(None));
        send_updates(&self.parts.out, id, updates).await;
    }
}

/// The card id of the call that started `child` in the parent's stored `events`, and what
/// the call is about in a few words.
fn stored_card(
    events: &[Arc<SessionEvent>],
    child: &StoredChild,
    tools: &dyn dsh_tools::ToolRegistry,
) -> Option<(String, String)> {
    let wanted = child.header.parent_call.as_deref()?;
    events.iter().find_map(|event| {
        if event.kind.as_str() != EventType::TOOL_CALL {
            return None;
        }
        let Ok(LogRecord::ToolCall(call)) = LogRecord::decode(event) else {
            return None;
        };
        if call.call_id != wanted {
            return None;
        }
        let label = tools
            .get(&call.name)
            .and_then(|tool| tool.present_call(&call))
            .map(|view| match view {
                dsh_tools::ToolCallView::Generic {
                    summary: Some(summary),
                    ..
                } => summary,
                dsh_tools::ToolCallView::Generic { title, .. } => title,
                dsh_tools::ToolCallView::Terminal { command, .. } => command,
            })
            .unwrap_or_else(|| call.name.clone());
        Some((
            format!("{}:{}:{}", call.turn, call.step, call.call_id),
            SafeText::plain(&label),
        ))
    })
}

/// The update linking `card` to the child's session.
fn link(card: &str, child: &SessionId) -> SessionUpdate {
    let reference = SessionReference::new(child.as_str().to_owned());
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        ToolCallId::new(card),
        ToolCallUpdateFields::new().content(vec![ToolCallContent::Session(reference)]),
    ))
}

/// Why a child's work stopped, as its idle state says it.
fn idle_reason(reason: &TurnEndReason) -> IdleStopReason {
    match reason {
        TurnEndReason::Completed => IdleStopReason::EndTurn,
        TurnEndReason::MaxTokens => IdleStopReason::MaxTokens,
        TurnEndReason::MaxSteps | TurnEndReason::RepeatedCall { .. } => {
            IdleStopReason::MaxTurnRequests
        }
        TurnEndReason::Refusal => IdleStopReason::Refusal,
        TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted => IdleStopReason::Cancelled,
        TurnEndReason::Error { .. } | TurnEndReason::Unknown => {
            IdleStopReason::Error(ErrorStopReason::new())
        }
    }
}
