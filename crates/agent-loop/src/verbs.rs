//! The delivery verbs, cancellation and status of the loop's agent: `dyn Agent`, and the start
//! of the driver a waking verb owes.

use dsh_agent::{
    Agent, AgentError, AgentEvent, AgentOptions, AgentStatus, CancelCause, ConfigChange,
    ConfigChangedRecord, ConfigOrigin, MessageId, SessionConfig, TurnOutcome, TurnTicket,
    UserMessage,
};
use dsh_session::{Failure, MAX_EVENT_BYTES, Session, SessionId, failure_code};
use futures::future::BoxFuture;

use crate::agent::LoopAgent;
use crate::inbox::{Kind, Pending, Work};

/// Room left in one event for the `user/message` envelope around a message's text.
const MESSAGE_HEADROOM: usize = 64 * 1024;

impl LoopAgent {
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
        self.enqueue(kind, Work::Say(message))
    }

    /// Queues accepted work; a waking kind on an idle agent opens a turn and starts the driver.
    fn enqueue(&self, kind: Kind, work: Work) -> Result<TurnTicket, AgentError> {
        let start_driver = {
            let mut state = self.state.lock();
            if state.closed {
                return Err(AgentError::Disposed {
                    id: self.id.clone(),
                });
            }
            let id = match &work {
                Work::Say(message) => message.id.clone(),
                Work::Compact(id) => id.clone(),
            };
            let claimed = state
                .start
                .as_ref()
                .is_some_and(|c| c.iter().any(|p| p.id() == &id));
            if state.inbox.holds_id(&id) || claimed {
                return Err(AgentError::DuplicateMessage { message_id: id });
            }
            let (ticket_tx, ticket) = TurnTicket::channel(id);
            state.inbox.push(
                kind,
                Pending {
                    work,
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
                failure: Failure::new(failure_code::INTERNAL, "the agent's driver could not start"),
            });
        }
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

    fn compact(&self, id: MessageId) -> Result<TurnTicket, AgentError> {
        self.enqueue(Kind::FollowUp, Work::Compact(id))
    }

    fn config(&self) -> SessionConfig {
        self.config.lock().clone()
    }

    fn configure(
        &self,
        change: ConfigChange,
        origin: ConfigOrigin,
    ) -> Result<SessionConfig, AgentError> {
        if self.state.lock().closed {
            return Err(AgentError::Disposed {
                id: self.id.clone(),
            });
        }
        if let ConfigChange::Model(model) = &change
            && (model.trim().is_empty() || model.len() > 256 || model.chars().any(char::is_control))
        {
            return Err(AgentError::InvalidRequest {
                field: "model".into(),
                reason: format!("{model:?} cannot be a model name"),
            });
        }
        if let ConfigChange::Server(url) = &change
            && (url.trim().is_empty() || url.len() > 2048 || url.chars().any(char::is_control))
        {
            return Err(AgentError::InvalidRequest {
                field: "server".into(),
                reason: format!("{url:?} cannot be a server's address"),
            });
        }
        // One change at a time, so each record's `old` is the value the one before left.
        let mut config = self.config.lock();
        let key = change.key();
        let new = change.value();
        let old = config.value(key).or_else(|| self.configured(key));
        if old.as_deref() == Some(new.as_str()) {
            return Ok(config.clone());
        }
        let record = ConfigChangedRecord {
            key,
            old,
            new,
            origin,
        };
        self.session
            .append(&self.shared.kinds.config, &record)
            .map_err(|err| AgentError::Session(std::sync::Arc::new(err)))?;
        config.apply(&change);
        Ok(config.clone())
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
