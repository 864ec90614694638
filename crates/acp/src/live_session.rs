//! One live session on the connection, and the prompt it is working on.
//!
//! The open prompt is private to the session's [`PromptSlot`]: its reply, the turn it is
//! bound to and whether a cancel was asked change only through the slot's methods, each
//! keeping one rule; nothing else locks it.
//!
//! - **One prompt at a time** ([`PromptSlot::open`]): a second is refused while one is open,
//!   and a prompt cancelled before it opened is answered `cancelled` at once.
//! - **A prompt is bound to its turn** ([`PromptSlot::bind`]) when its message (or, for a
//!   compaction, its notice) goes by; only that turn's events reach the client.
//! - **A cancel is asked once** ([`PromptSlot::cancel`]); the answer says `cancelled`
//!   whatever the turn becomes.
//! - **A prompt is answered once** ([`PromptSlot::settle`]), by its settlement; one still
//!   open when its session is closed ([`LiveSession::close`], written once for `session/close`
//!   and teardown) answers `-32603` ([`crate::reply::Reply`] on drop).
//! - **Idle means no open prompt** ([`PromptSlot::settled`]): teardown waits on it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{PromptResponse, StopReason};
use dsh_agent::commands::Commands;
use dsh_agent::record::{CompactingRecord, Record as LogRecord};
use dsh_agent::{Agent, AgentHandle, MessageId};
use dsh_kernel::CancellationToken;
use dsh_session::SessionId;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::PermissionMode;
use crate::path::Item;
use crate::render::RenderCaps;
use crate::reply::{Reply, result};
use crate::rpc::RpcError;

/// The allow rules of the "always" answers given in one session, shared with its gate: a
/// call one covers is not announced as waiting for a question (the loop remembers them for
/// the project and does not ask).
#[derive(Default)]
pub(crate) struct Grants {
    pub always: Mutex<Vec<dsh_tools::Rule>>,
    /// The configuration's rules, as the loop applies them.
    pub rules: Arc<dsh_tools::PermissionRules>,
}

impl Grants {
    /// Whether the loop will ask about a call with `effect` in `mode`: the configuration's
    /// rules and the "always" answers decide first, as in the loop.
    pub fn asks(
        &self,
        mode: PermissionMode,
        effect: dsh_tools::Effect,
        tool: &str,
        args: &serde_json::Value,
        roots: &dsh_tools::Roots,
    ) -> bool {
        let always = self.always.lock();
        let verdict = self.rules.verdict_with(tool, args, roots, &always);
        mode.asks_under(effect, verdict.map(|(verdict, _)| verdict))
    }
}

/// A session's permission mode, shared by its gate and the option that changes it.
pub(crate) type ModeCell = Arc<Mutex<PermissionMode>>;

/// Whether the client knows the session (its answer went), and whether the model picker it
/// was shown had the server's list: a list that came later is sent as an update.
#[derive(Debug, Default)]
pub(crate) struct Pickers {
    pub announced: bool,
    pub with_models: bool,
}

/// The open prompt: what only [`LiveSession`]'s methods touch.
pub(crate) struct PromptSlot {
    open: Mutex<Option<OpenPrompt>>,
    /// `true` while no prompt is open. Always set with `send_replace`: `send` changes
    /// nothing while no receiver exists, which is most of the time.
    idle: watch::Sender<bool>,
}

impl Default for PromptSlot {
    fn default() -> PromptSlot {
        PromptSlot {
            open: Mutex::new(None),
            idle: watch::channel(true).0,
        }
    }
}

struct OpenPrompt {
    /// The `session/prompt` request's duty to answer.
    reply: Reply,
    /// The message the prompt became; binds the prompt to its turn.
    message_id: MessageId,
    /// The turn the message entered, once it was seen.
    turn: Option<u32>,
    /// A cancel arrived: the response is `cancelled` whatever the turn becomes.
    cancel_requested: bool,
    /// Fired by the cancel, for what waits before the prompt reaches the agent.
    cancelled: CancellationToken,
}

/// A prompt taken for its answer: the turn it was bound to, and whether it was cancelled.
pub(crate) struct Settling {
    pub reply: Reply,
    pub turn: Option<u32>,
    pub cancel_requested: bool,
}

/// One live session on the connection.
pub(crate) struct LiveSession {
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
    /// The project's hook files to ask the client to trust, at the next prompt.
    pub hooks_to_ask: Mutex<Vec<dsh_hooks::ProjectFile>>,
    /// How many hook files the session asked about: each question's card id is new.
    pub trust_asked: std::sync::atomic::AtomicU32,
    pub pickers: Mutex<Pickers>,
    /// The open prompt, through the methods below only.
    pub prompt: PromptSlot,
    pub queue: mpsc::UnboundedSender<Item>,
}

/// Why a prompt was not opened; the reply comes back to be answered.
pub(crate) enum NotOpened {
    /// Another prompt is open.
    Busy(Reply),
    /// It was cancelled before it opened.
    Cancelled(Reply),
}

impl PromptSlot {
    /// Opens a prompt that became `message_id`; its reply travels with its turn from here.
    pub(crate) fn open(
        &self,
        reply: Reply,
        message_id: MessageId,
        cancelled_ahead: bool,
    ) -> Result<(), NotOpened> {
        let mut open = self.open.lock();
        if open.is_some() {
            return Err(NotOpened::Busy(reply));
        }
        if cancelled_ahead {
            // Cancelled in the same read, before any turn could claim it: the model is never
            // called, and the words never enter the history.
            return Err(NotOpened::Cancelled(reply));
        }
        *open = Some(OpenPrompt {
            reply,
            message_id,
            turn: None,
            cancel_requested: false,
            cancelled: CancellationToken::new(),
        });
        let _ = self.idle.send_replace(false);
        Ok(())
    }

    /// The agent refused the open prompt: it is answered with `error` and closed.
    pub(crate) fn refuse(&self, error: RpcError) {
        let open = self.open.lock().take();
        let _ = self.idle.send_replace(true);
        if let Some(open) = open {
            open.reply.send(Err(error));
        }
    }

    /// Whether `event` belongs to the open prompt's turn; binds the prompt to its turn when
    /// its message goes by. A title is the session's, not a turn's: it always belongs.
    pub(crate) fn bind(&self, event: &LogRecord) -> bool {
        if let LogRecord::Title(_) = event {
            return true;
        }
        let mut open = self.open.lock();
        let (Some(open), Some(turn)) = (open.as_mut(), event.turn()) else {
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

    /// Like [`LiveSession::bind`], for a compaction's passing notice: a `/compact` prompt's
    /// turn has no message, so its notice binds it.
    pub(crate) fn bind_compaction(&self, note: &CompactingRecord) -> bool {
        let mut open = self.open.lock();
        let Some(open) = open.as_mut() else {
            return false;
        };
        if open.turn.is_none() && note.request.as_ref() == Some(&open.message_id) {
            open.turn = Some(note.turn);
        }
        open.turn == Some(note.turn)
    }

    /// Whether the open prompt is bound to `turn`.
    pub(crate) fn in_turn(&self, turn: u32) -> bool {
        self.open
            .lock()
            .as_ref()
            .is_some_and(|open| open.turn == Some(turn))
    }

    /// Whether the open prompt is the request `id`.
    pub(crate) fn is_request(&self, id: &Value) -> bool {
        self.open
            .lock()
            .as_ref()
            .is_some_and(|open| open.reply.id() == id)
    }

    /// Marks the open prompt cancelled; its message id the first time, `None` after (or
    /// when no prompt is open).
    pub(crate) fn cancel(&self) -> Option<MessageId> {
        let mut open = self.open.lock();
        match open.as_mut() {
            Some(open) if !open.cancel_requested => {
                open.cancel_requested = true;
                open.cancelled.cancel();
                Some(open.message_id.clone())
            }
            Some(_) | None => None,
        }
    }

    /// What a cancel of the open prompt fires (already fired when it was cancelled).
    pub(crate) fn cancellation(&self) -> Option<CancellationToken> {
        self.open.lock().as_ref().map(|open| open.cancelled.clone())
    }

    /// Takes the open prompt for its answer when it is the one `message_id` names.
    pub(crate) fn settle(&self, message_id: &MessageId) -> Option<Settling> {
        let mut open = self.open.lock();
        match open.as_ref() {
            Some(prompt) if prompt.message_id == *message_id => {
                open.take().map(|prompt| Settling {
                    reply: prompt.reply,
                    turn: prompt.turn,
                    cancel_requested: prompt.cancel_requested,
                })
            }
            Some(_) | None => None,
        }
    }

    /// A settled prompt was answered: the session is idle. Only after the answer went to
    /// the writer: teardown waits for this, then flushes.
    pub(crate) fn settled(&self) {
        let _ = self.idle.send_replace(true);
    }
}

impl LiveSession {
    /// Queues an item for the session's ordered path; after the path stopped (teardown)
    /// nothing is left to render it.
    pub(crate) fn push(&self, item: Item) {
        let _ = self.queue.send(item);
    }

    /// Waits (at most twice `grace`) for the open prompt to settle.
    pub(crate) async fn wait_idle(&self, grace: Duration) {
        let mut idle = self.prompt.idle.subscribe();
        let _ = tokio::time::timeout(grace * 2, idle.wait_for(|idle| *idle)).await;
    }

    /// Ends the session's agent and its own MCP servers; a prompt still open is answered
    /// as an internal error.
    pub(crate) async fn dispose(&self) {
        self.handle.dispose().await;
        if let Some(servers) = &self.mcp {
            servers.dispose().await;
        }
        let unsettled = self.prompt.open.lock().take();
        drop(unsettled);
    }

    /// Closes the session after a cancel: waits for its prompt to settle, then disposes it.
    pub(crate) async fn close(&self, grace: Duration) {
        self.wait_idle(grace).await;
        self.dispose().await;
    }
}

/// A prompt's answer: why its turn stopped.
pub(crate) fn stopped(reason: StopReason) -> Result<Value, RpcError> {
    result(&PromptResponse::new(reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::writer;
    use dsh_agent::record::{TitleRecord, TitleSource, UserMessageRecord};
    use dsh_agent::{MessageSource, UserMessage};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    /// A reply whose answer goes nowhere: these rules are about who holds it.
    fn reply(id: i64) -> Reply {
        let (out, _writing) = writer(tokio::io::sink(), CancellationToken::new());
        Reply::new(out, json!(id))
    }

    fn said(turn: u32, id: &MessageId) -> LogRecord {
        LogRecord::UserMessage(UserMessageRecord {
            turn,
            step: 1,
            message: UserMessage {
                id: id.clone(),
                source: MessageSource::User,
                ..UserMessage::user("hi")
            },
        })
    }

    #[test]
    fn one_prompt_at_a_time_and_a_cancelled_one_never_opens() {
        let slot = PromptSlot::default();
        assert!(matches!(
            slot.open(reply(1), MessageId::mint(), true),
            Err(NotOpened::Cancelled(_))
        ));
        assert!(slot.open(reply(2), MessageId::mint(), false).is_ok());
        assert!(matches!(
            slot.open(reply(3), MessageId::mint(), false),
            Err(NotOpened::Busy(_))
        ));
        assert!(slot.is_request(&json!(2)) && !slot.is_request(&json!(3)));
    }

    #[test]
    fn a_prompt_is_bound_to_the_turn_its_message_entered() {
        let slot = PromptSlot::default();
        let id = MessageId::mint();
        assert!(!slot.bind(&said(1, &id)), "no prompt is open");
        slot.open(reply(1), id.clone(), false).ok();
        assert!(
            !slot.bind(&said(1, &MessageId::mint())),
            "another message's turn"
        );
        assert!(slot.bind(&said(2, &id)));
        assert!(slot.in_turn(2) && !slot.in_turn(1));
        let title = LogRecord::Title(TitleRecord {
            title: "t".into(),
            source: TitleSource::Prompt,
        });
        assert!(slot.bind(&title), "a title is the session's");
    }

    #[test]
    fn a_cancel_is_asked_once() {
        let slot = PromptSlot::default();
        assert_eq!(slot.cancel(), None);
        let id = MessageId::mint();
        slot.open(reply(1), id.clone(), false).ok();
        assert_eq!(slot.cancel(), Some(id));
        assert_eq!(slot.cancel(), None);
    }

    #[tokio::test]
    async fn a_prompt_is_settled_once_by_its_own_message_then_the_slot_is_idle() {
        let slot = PromptSlot::default();
        let mut idle = slot.idle.subscribe();
        let id = MessageId::mint();
        slot.open(reply(1), id.clone(), false).ok();
        assert!(!*idle.borrow_and_update());
        assert!(
            slot.settle(&MessageId::mint()).is_none(),
            "another prompt's ticket"
        );
        let settling = slot.settle(&id).expect("its own");
        assert!(slot.settle(&id).is_none(), "settled once");
        drop(settling);
        slot.settled();
        assert!(*idle.borrow_and_update());
    }
}
