//! The loop's agent: its state, and the steps on it that the driver, the turn and the verbs
//! share (the outbox of agent events, claiming a turn, the cancel cause).
//!
//! One lock guards the inbox, the status, the open turn and the phase; it is never held
//! across an await, an event emission, a session append or a call into a tool or the model.
//! Agent events go through an outbox drained by whichever caller finds no drain in progress,
//! so they are emitted in the order of the changes they report, also when a listener causes
//! another change.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use dsh_agent::{
    AgentEvent, AgentOptions, AgentSetup, AgentStatus, CancelCause, ConfigKey, SessionConfig,
    TurnEndReason, TurnOutcome,
};
use dsh_fs::FileAccess;
use dsh_kernel::{CancellationToken, Scope};
use dsh_llm::Model;
use dsh_session::{Session, SessionId, SessionStore};
use dsh_tools::{Roots, ToolRegistry};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::history::Projection;
use crate::inbox::{Inbox, Pending};
use crate::shared::Loop;

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
    /// The caller's gate, files, tools and directories.
    pub(crate) setup: AgentSetup,
    pub(crate) shared: Arc<Loop>,
    pub(crate) state: Mutex<State>,
    /// The model history as of the last step, extended by each step with what was appended.
    pub(crate) history: Mutex<Projection>,
    /// The context (tokens) when an automatic compaction last failed: the next is tried only
    /// once the context grew past it by a twentieth of the window, not at every step.
    pub(crate) compaction_failed_at: Mutex<Option<u64>>,
    /// The allow rules of "always" answers for this session's project: read from where
    /// they are remembered at the first call that needs them, then extended by each answer.
    pub(crate) remembered: Mutex<Option<Vec<dsh_tools::Rule>>>,
    /// Whether the session has a title (or a prompt of a dsh that wrote none): the first
    /// prompt of a session without one names it.
    pub(crate) titled: AtomicBool,
    /// The settings the log recorded: the model and reasoning level of the next request.
    pub(crate) config: Mutex<SessionConfig>,
    /// The system message of every request, settled before the first turn of this agent's
    /// life (`None` inside: there is none).
    pub(crate) system: OnceLock<Option<Arc<str>>>,
    /// Where the session's log is, for a provider that stores it in a file (hooks read it as
    /// `transcript_path`); set once the session is published.
    pub(crate) transcript: OnceLock<PathBuf>,
    /// The hooks this session runs, read again at each turn.
    pub(crate) hooks: Mutex<crate::hook_state::SessionHooks>,
    /// `(generation, idle)`: a waking verb starts a new generation; the driver's watcher marks
    /// its generation idle once the driver task is gone.
    pub(crate) quiet: watch::Sender<(u64, bool)>,
    outbox: Mutex<VecDeque<AgentEvent>>,
    draining: AtomicBool,
    pub(crate) me: Weak<LoopAgent>,
}

impl LoopAgent {
    /// The session's directories, which tools weigh paths against.
    pub(crate) fn roots(&self) -> Roots {
        Roots::new(
            PathBuf::from(self.session.header().cwd.clone()),
            self.setup.additional_dirs.clone(),
        )
    }

    /// The allow rules remembered for this session's project, read once; one that no longer
    /// parses is skipped (and logged), never a reason to fail the call.
    pub(crate) fn remembered_rules(&self) -> Vec<dsh_tools::Rule> {
        let mut cell = self.remembered.lock();
        cell.get_or_insert_with(|| {
            let Some(store) = &self.shared.config.remembered.0 else {
                return Vec::new();
            };
            let cwd = PathBuf::from(self.session.header().cwd.clone());
            let (rules, skipped) = dsh_tools::Rule::parse_each(&store.rules(&cwd));
            for e in skipped {
                tracing::warn!("a remembered rule is skipped: {e}");
            }
            rules
        })
        .clone()
    }

    /// Adds the allow rule of an "always" answer to this session's and remembers it for the
    /// project: `Err` when `rule` is not one (the answer then allowed its call alone);
    /// otherwise the project, or `None` when it could not be stored (it holds for this
    /// session only).
    pub(crate) fn remember(&self, rule: &str) -> Result<Option<String>, dsh_tools::RuleError> {
        let parsed = dsh_tools::Rule::parse(rule)?;
        self.remembered_rules();
        if let Some(rules) = self.remembered.lock().as_mut() {
            rules.push(parsed);
        }
        let Some(store) = self.shared.config.remembered.0.as_ref() else {
            return Ok(None);
        };
        let cwd = PathBuf::from(self.session.header().cwd.clone());
        Ok(store
            .remember(&cwd, rule)
            .inspect_err(|e| tracing::warn!("an \"always\" answer is not remembered: {e}"))
            .ok()
            .map(|project| project.to_string_lossy().into_owned()))
    }

    /// The value `key` has when the log recorded none: what the agent was configured with.
    pub(crate) fn configured(&self, key: ConfigKey) -> Option<String> {
        match key {
            ConfigKey::Model => self
                .scope
                .get::<dyn Model>()
                .map(|model| model.info().model.clone()),
            ConfigKey::ThoughtLevel => self.options.reasoning.map(|l| l.as_str().to_owned()),
            ConfigKey::Mode => self
                .setup
                .approval
                .as_ref()
                .map(|gate| gate.mode().as_str().to_owned()),
            // The loop does not know where its model provider sends requests; only the front
            // end that chose the server records it.
            ConfigKey::Server => None,
        }
    }

    /// The model and reasoning level of the next request: the log's choice, else the
    /// configured one.
    pub(crate) fn request_params(&self) -> (Option<String>, Option<dsh_llm::ReasoningEffort>) {
        let config = self.config.lock();
        (
            config.model.clone(),
            config.thought_level.or(self.options.reasoning),
        )
    }

    /// The tools this agent is offered: the caller's, else the kernel's registry.
    pub(crate) fn tool_registry(&self) -> Result<Arc<dyn ToolRegistry>, dsh_kernel::KernelError> {
        match &self.setup.tools {
            Some(tools) => Ok(tools.clone()),
            None => self.scope.require::<dyn ToolRegistry>(),
        }
    }

    /// Where this agent's tools read and write files: the caller's, else the kernel's.
    pub(crate) fn file_access(&self) -> Option<Arc<dyn FileAccess>> {
        self.setup
            .files
            .clone()
            .or_else(|| self.scope.get::<dyn FileAccess>())
    }
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
    pub(crate) generation: u64,
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
    pub(crate) setup: AgentSetup,
    pub(crate) shared: Arc<Loop>,
    pub(crate) next_turn: u32,
    pub(crate) titled: bool,
    pub(crate) config: SessionConfig,
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
            setup: parts.setup,
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
            history: Mutex::new(Projection::default()),
            compaction_failed_at: Mutex::new(None),
            remembered: Mutex::new(None),
            titled: AtomicBool::new(parts.titled),
            config: Mutex::new(parts.config),
            system: OnceLock::new(),
            transcript: OnceLock::new(),
            hooks: Mutex::new(crate::hook_state::SessionHooks::default()),
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

    /// The reason for turn `number`, which saw its token fire.
    pub(crate) fn aborted(&self, number: u32) -> TurnEndReason {
        TurnEndReason::Aborted {
            cause: self.cancel_cause(number).unwrap_or(CancelCause::User),
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
