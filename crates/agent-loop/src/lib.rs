//! Seam role: provider — the agent loop. [`AgentLoopPlugin`] provides `dyn AgentRegistry`;
//! everything else is private.
//!
//! Each agent owns an inbox (follow-ups, and a boundary list of steering and injected
//! messages), a driver task that lives only while a turn runs, and a detached scope its tool
//! bodies run on. A turn claims one follow-up plus all pending steering per step boundary;
//! streams the model's answer into the session; runs the tools the answer asks for; and loops
//! until no step is owed.
//!
//! # Invariants
//!
//! - **Enclosure.** Every `turn/start` gets exactly one `turn/end` and every `step/start` one
//!   `step/end`, on every path; after every `step/end` each tool call of that step has
//!   exactly one `tool/result`, so the next request is always well-formed.
//! - **The fence.** An effective cancel dooms every message accepted before it: none of them
//!   is ever claimed, so a prompt cancelled before its turn started never reaches the model;
//!   messages accepted after it run as independent turns.
//! - **Model-visible means logged.** The system message sent is the text of the log's last
//!   `context/instructions` record, written before the first `turn/start` that needs it.
//! - **Durability.** The loop flushes the session before each model request, before each tool
//!   body and after each `turn/end`, and resolves a turn's tickets only after that last one.
//! - **Teardown order.** Close delivery, cancel with `Disposed`, await quiescence, unregister,
//!   detach the session (which flushes the closing `turn/end`), dispose the agent's scope — on
//!   the handle's `dispose()`, an owner scope's disposal and the plugin's unload alike.
//! - **No lock across an await**, an event emission, a session append or a call into a tool or
//!   the model.
#![deny(missing_docs)]

mod agent;
mod compact;
mod config;
mod context;
mod create;
mod driver;
mod history;
mod hook_state;
mod hooks;
mod inbox;
mod kinds;
mod orphans;
mod progress;
mod registry;
mod repair;
mod repeats;
mod shared;
mod step;
mod stored;
mod tools;
mod trace;
mod turn;
mod usage;
mod verbs;
mod writer;

use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent::{AgentFactory, AgentRegistry, CreateAgent, ResumeAgent};
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::{EventClass, SessionPersistence, SessionStore};

pub use config::{ConfiguredAgent, LoopConfig, Remembered};
pub use history::CANCELLED_NOTE;

use crate::registry::LoopRegistry;

/// The agent loop as a kernel plugin named `agent-loop`. Needs `SessionStore` provided first
/// (and, for resuming, `dyn SessionPersistence`).
pub struct AgentLoopPlugin {
    config: LoopConfig,
}

impl AgentLoopPlugin {
    /// A plugin running agents with `config`.
    pub fn new(config: LoopConfig) -> AgentLoopPlugin {
        AgentLoopPlugin { config }
    }
}

#[async_trait]
impl Plugin for AgentLoopPlugin {
    fn name(&self) -> &str {
        "agent-loop"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        self.config.validate()?;
        let store = scope.require::<SessionStore>()?;
        let runtime = tokio::runtime::Handle::try_current()?;
        let kinds = kinds::Kinds::new()?;
        // The kinds this milestone added are ignorable: a dsh that predates one loads the log
        // and does without it — no system text, the whole history instead of a summary, an
        // untitled session, its configured settings, the todo tool's result alone.
        for kind in [
            &kinds.instructions,
            &kinds.compacted,
            &kinds.title,
            &kinds.config,
            &kinds.plan,
            &kinds.permission_rule,
            &kinds.hook_ran,
        ] {
            store.vocabulary().register(kind, EventClass::Ignorable)?;
        }
        let shared = Arc::new(shared::Loop {
            config: self.config.clone(),
            kinds,
            plugin: scope.clone(),
            store,
            runtime,
            table: parking_lot::Mutex::new(shared::Table::default()),
        });
        let registry = Arc::new(LoopRegistry {
            shared: shared.clone(),
        });
        scope.provide::<dyn AgentRegistry>(registry.clone())?;
        // Agents from configuration belong to the plugin alone: no consumer manages a handle.
        for configured in &self.config.agents {
            let started = match &configured.session_id {
                Some(id) if stored(scope, id).await => {
                    let mut request = ResumeAgent::new(scope.clone(), id.clone());
                    request.options = configured.options.clone();
                    registry.resume(request).await
                }
                _ => {
                    let mut request = CreateAgent::new(scope.clone());
                    request.session_id = configured.session_id.clone();
                    request.cwd = configured.cwd.clone();
                    request.options = configured.options.clone();
                    registry.create(request).await
                }
            };
            if let Err(err) = started {
                tracing::error!(agent = ?configured.session_id, "a configured agent did not start: {err}");
            }
        }
        Ok(())
    }
}

async fn stored(scope: &Scope, id: &dsh_session::SessionId) -> bool {
    match scope.get::<dyn SessionPersistence>() {
        Some(persistence) => matches!(persistence.header(id).await, Ok(Some(_))),
        None => false,
    }
}
