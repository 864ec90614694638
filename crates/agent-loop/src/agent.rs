//! The loop's agent: its state, the delivery verbs, cancellation and status.
//!
//! One lock guards the inbox, the status, the open turn and the phase; it is never held
//! across an await, an event emission, a session append or a call into a tool or the model.
//! Agent events go through an outbox drained by whichever caller finds no drain in progress,
//! so they are emitted in the order of the changes they report, also when a listener causes
//! another change.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use dsh_agent::{
    Agent, AgentError, AgentEvent, AgentOptions, AgentStatus, CancelCause, TurnOutcome, TurnTicket,
    UserMessage,
};
use dsh_kernel::{CancellationToken, Scope};
use dsh_session::{MAX_EVENT_BYTES, Session, SessionId, SessionStore};
use dsh_tools::ApprovalGate;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::inbox::{Inbox, Kind, Pending};
use crate::shared::Loop;

/// Room left in one event for the `user/message` envelope around a message's text.
const MESSAGE_HEADROOM: usize = 64 * 1024;

pub(crate) struct LoopAgent {
    pub(crate) id: SessionId,
    pub(crate) session: Session,
    pub(crate) options: AgentOptions,
    /// The agent's own detached scope: the driver and tool bodies run here, and per-step
    /// service lookups go through it.
    pub(crate) scope: Scope,
    /// A child of `scope` handed to tools for their effects; never the scope tasks run on.
    pub(crate) tools_scope: Scope,
    pub(crate) store: Arc<SessionStore>,
    pub(crate) approval: Option<Arc<dyn ApprovalGate>>,
    pub(crate) shared: Arc<Loop>,
    pub(crate) state: Mutex<State>,
    /// `(generation, idle)`: a waking verb starts a new generation; the driver's watcher marks
    /// its generation idle once the driver task is gone.
    quiet: watch::Sender<(u64, bool)>,
    outbox: Mutex<VecDeque<AgentEvent>>,
    draining: AtomicBool,
    me: Weak<LoopAgent>,
}

pub(crate) struct State {
    pub(crate) closed: bool,
    pub(crate) inbox: Inbox,
    pub(crate) status: AgentStatus,
    /// The open turn, from its claim to its `turn/end`.
    pub(crate) turn: Option<TurnCtl>,
    /// The claim for the first step of the open turn, until the driver takes it.
    pub(crate) start: Option<Vec<Pending>>,
    pub(crate) next_turn: u32,
    generation: u64,
}

pub(crate) struct TurnCtl {
    pub(crate) number: u32,
    pub(crate) token: CancellationToken,
    /// The first cause requested; later requests do not change it.
    pub(crate) cause: Option<CancelCause>,
}

pub(crate) struct AgentParts {
    pub(crate) session: Session,
    pub(crate) options: AgentOptions,
    pub(crate) scope: Scope,
    pub(crate) tools_scope: Scope,
    pub(crate) store: Arc<SessionStore>,
    pub(crate) approval: Option<Arc<dyn ApprovalGate>>,
    pub(crate) shared: Arc<Loop>,
    pub(crate) next_turn: u32,
}

impl LoopAgent {
    pub(crate) fn new(parts: AgentParts) -> Arc<LoopAgent> {
        Arc::new_cyclic(|me| LoopAgent {
            id: parts.session.id().clone(),
            session: parts.session,
            options: parts.options,
            scope: parts.scope,
            tools_scope: parts.tools_scope,
            store: parts.store,
            approval: parts.approval,
            shared: parts.shared,
            state: Mutex::new(State {
                closed: false,
                inbox: Inbox::default(),
                status: AgentStatus::Idle,
                turn: None,
                start: None,
                next_turn: parts.next_turn,
                generation: 0,
            }),
            quiet: watch::Sender::new((0, true)),
            outbox: Mutex::new(VecDeque::new()),
            draining: AtomicBool::new(false),
            me: me.clone(),
        })
    }

    /// Queues an agent event; emitted by [`LoopAgent::drain`] in queue order.
    pub(crate) fn queue_event(&self, event: AgentEvent) {
        self.outbox.lock().push_back(event);
    }

    /// Emits queued events unless another caller is already doing so (it will emit these too).
    pub(crate) fn drain(&self) {
        loop {
            if self.draining.swap(true, Ordering::AcqRel) {
                return;
            }
            while let Some(event) = self.outbox.lock().pop_front() {
                self.shared.plugin.emit(event);
            }
            self.draining.store(false, Ordering::Release);
            // An event queued between the last pop and the release is ours to emit.
            if self.outbox.lock().is_empty() {
                return;
            }
        }
    }

    fn deliver(&self, kind: Kind, message: UserMessage) -> Result<TurnTicket, AgentError> {
        if message.text.trim().is_empty() {
            return Err(AgentError::InvalidMessage {
                reason: "the text is empty".into(),
            });
        }
        let size = serde_json::to_vec(&message)
            .map(|v| v.len())
            .unwrap_or(usize::MAX);
        if size > MAX_EVENT_BYTES - MESSAGE_HEADROOM {
            return Err(AgentError::InvalidMessage {
                reason: format!(
                    "the message is {size} bytes; at most {} fit in one event",
                    MAX_EVENT_BYTES - MESSAGE_HEADROOM
                ),
            });
        }
        let start_driver = {
            let mut state = self.state.lock();
            if state.closed {
                return Err(AgentError::Disposed {
                    id: self.id.clone(),
                });
            }
            let claimed = state
                .start
                .as_ref()
                .is_some_and(|c| c.iter().any(|p| p.message.id == message.id));
            if state.inbox.holds(&message) || claimed {
                return Err(AgentError::DuplicateMessage {
                    message_id: message.id,
                });
            }
            let (ticket_tx, ticket) = TurnTicket::channel(message.id.clone());
            state.inbox.push(
                kind,
                Pending {
                    message,
                    ticket: ticket_tx,
                },
            );
            let wakes = kind != Kind::Inject && state.status == AgentStatus::Idle;
            let mut generation = None;
            if wakes {
                self.open_turn(&mut state);
                state.status = AgentStatus::Running;
                state.generation += 1;
                generation = Some(state.generation);
                self.quiet.send_replace((state.generation, false));
                self.queue_event(AgentEvent::Status {
                    id: self.id.clone(),
                    status: AgentStatus::Running,
                });
            }
            (generation, ticket)
        };
        let (generation, ticket) = start_driver;
        self.drain();
        if let Some(generation) = generation {
            self.start_driver(generation);
        }
        Ok(ticket)
    }

    /// Claims the first step of a new turn (under the state lock).
    pub(crate) fn open_turn(&self, state: &mut State) {
        let claim = state.inbox.claim_first();
        state.start = Some(claim);
        state.turn = Some(TurnCtl {
            number: state.next_turn,
            token: CancellationToken::new(),
            cause: None,
        });
        state.next_turn = state.next_turn.saturating_add(1);
    }

    fn start_driver(&self, generation: u64) {
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let _entered = self.shared.runtime.enter();
        match self.scope.spawn(crate::driver::drive(me.clone())) {
            Ok(handle) => {
                // Idle is reported to `when_idle` only once the driver task is gone.
                let quiet = self.quiet.clone();
                self.shared.runtime.spawn(async move {
                    let _ = handle.join().await;
                    quiet.send_if_modified(|(g, idle)| {
                        let mine = *g == generation && !*idle;
                        if mine {
                            *idle = true;
                        }
                        mine
                    });
                });
            }
            Err(err) => {
                // The agent's scope closed under us: nothing can run, so nothing may wait.
                tracing::error!(agent = %self.id, "cannot start the agent's driver: {err}");
                me.abandon_run();
            }
        }
    }

    /// Fails everything claimed or pending and goes idle: the driver could not run.
    fn abandon_run(&self) {
        let doomed = {
            let mut state = self.state.lock();
            let mut doomed = state.start.take().unwrap_or_default();
            doomed.extend(state.inbox.take_all());
            state.turn = None;
            state.status = AgentStatus::Idle;
            let generation = state.generation;
            self.quiet.send_replace((generation, true));
            doomed
        };
        for pending in doomed {
            pending.ticket.resolve(TurnOutcome::Failed {
                failure: crate::turn::failure("internal", "the agent's driver could not start"),
            });
        }
    }

    /// Refuses further delivery: the first teardown step.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
    }

    /// Resolves every message still pending `Discarded` (teardown, after its cancel).
    pub(crate) fn discard_parked(&self, cause: CancelCause) {
        let parked = self.state.lock().inbox.take_all();
        for pending in parked {
            pending.ticket.resolve(TurnOutcome::Discarded { cause });
        }
    }

    /// The cause requested for the open turn `number`, if any.
    pub(crate) fn cancel_cause(&self, number: u32) -> Option<CancelCause> {
        let state = self.state.lock();
        state
            .turn
            .as_ref()
            .filter(|t| t.number == number)
            .and_then(|t| t.cause)
    }
}

impl Agent for LoopAgent {
    fn id(&self) -> &SessionId {
        &self.id
    }

    fn session(&self) -> &Session {
        &self.session
    }

    fn options(&self) -> &AgentOptions {
        &self.options
    }

    fn status(&self) -> AgentStatus {
        self.state.lock().status
    }

    fn send(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        self.deliver(Kind::FollowUp, message)
    }

    fn steer(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        self.deliver(Kind::Steer, message)
    }

    fn inject(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        self.deliver(Kind::Inject, message)
    }

    fn cancel(&self, cause: CancelCause) -> bool {
        let (doomed, token) = {
            let mut state = self.state.lock();
            let running = state.status == AgentStatus::Running;
            let open = state.turn.as_ref().is_some_and(|t| t.cause.is_none());
            // Injected messages parked on an idle agent ride with the next turn: an idle
            // cancel has nothing to cancel and records nothing.
            let waking = state.inbox.has_waking();
            if !(open || (running && waking)) {
                return false;
            }
            // The fence: everything pending now is doomed and can never be claimed.
            let doomed = state.inbox.take_all();
            let mut token = None;
            let mut turn = None;
            if let Some(ctl) = state.turn.as_mut().filter(|t| t.cause.is_none()) {
                ctl.cause = Some(cause);
                token = Some(ctl.token.clone());
                turn = Some(ctl.number);
            }
            self.queue_event(AgentEvent::CancelRequested {
                id: self.id.clone(),
                cause,
                turn,
                discarded: u32::try_from(doomed.len()).unwrap_or(u32::MAX),
            });
            (doomed, token)
        };
        self.drain();
        for pending in doomed {
            pending.ticket.resolve(TurnOutcome::Discarded { cause });
        }
        if let Some(token) = token {
            token.cancel();
        }
        true
    }

    fn when_idle(&self) -> BoxFuture<'static, ()> {
        let mut quiet = self.quiet.subscribe();
        Box::pin(async move {
            let _ = quiet.wait_for(|(_, idle)| *idle).await;
        })
    }
}
