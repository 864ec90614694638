//! Creation and resume: the transaction that publishes an agent, and its teardown.
//!
//! Before its first await a creation makes the agent's detached scope and its teardown and
//! links that teardown to the caller's owner scope and to the plugin's scope, so disposing
//! either one at any moment reaches it. The transaction then runs on a task owned by no
//! scope (no disposal can abort it half-way, and dropping the caller's future leaves nothing
//! behind); a teardown that starts while it runs cancels it and waits for it to roll back.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use dsh_agent::{
    Agent, AgentError, AgentEvent, AgentFactory, AgentHandle, AgentOptions, AgentSetup,
    CancelCause, CreateAgent, ResumeAgent, SessionConfig,
};
use dsh_kernel::{CancellationToken, Scope, Teardown};
use dsh_session::{
    PersistenceError, Session, SessionError, SessionId, SessionPersistence, SessionSpec,
};
use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};

use crate::agent::{AgentParts, LoopAgent};
use crate::registry::{IdClaim, LoopRegistry, publish, unregister};
use crate::shared::Loop;
use crate::stored;

/// Where a creation stands, shared by its transaction and its teardown.
struct Creation {
    /// Fired by a teardown that starts before the transaction ended.
    cancel: CancellationToken,
    /// Set once nothing of the transaction is visible but what it published: it published,
    /// rolled back, or withdrew its session while an announcement was held up.
    finished: watch::Sender<bool>,
    /// The published agent, taken by the teardown so nothing keeps it alive afterwards.
    agent: Mutex<Option<Arc<LoopAgent>>>,
    /// The registry entry's settled flag, once published.
    settled: OnceLock<Arc<watch::Sender<bool>>>,
}

/// What the transaction needs besides the session it builds.
struct Plan {
    owner: Scope,
    options: AgentOptions,
    setup: AgentSetup,
}

enum Origin {
    New {
        id: Option<SessionId>,
        cwd: String,
        parent: Option<(SessionId, String)>,
    },
    Resume(SessionId),
}

async fn create(registry: &LoopRegistry, request: CreateAgent) -> Result<AgentHandle, AgentError> {
    let shared = &registry.shared;
    let options = request.options.apply_to(&shared.config.defaults);
    options.validate()?;
    let cwd = checked_cwd(request.cwd)?;
    let plan = Plan {
        owner: request.owner,
        options,
        setup: request.setup,
    };
    let claim = match &request.session_id {
        Some(id) => Some(IdClaim::take(shared, id).await?),
        None => None,
    };
    let origin = Origin::New {
        id: request.session_id,
        cwd,
        parent: request.parent,
    };
    run(shared, plan, origin, claim).await
}

async fn resume(registry: &LoopRegistry, request: ResumeAgent) -> Result<AgentHandle, AgentError> {
    let shared = &registry.shared;
    let options = request.options.apply_to(&shared.config.defaults);
    options.validate()?;
    let claim = IdClaim::take(shared, &request.session_id).await?;
    let plan = Plan {
        owner: request.owner,
        options,
        setup: request.setup,
    };
    run(
        shared,
        plan,
        Origin::Resume(request.session_id),
        Some(claim),
    )
    .await
}

/// Links the creation to its owners, then runs the transaction on its own task. `claim`, the
/// hold on a chosen id, is given back by being dropped on every path that does not publish —
/// after the creation's teardown, so a creation waiting for the id never races it.
async fn run(
    shared: &Arc<Loop>,
    plan: Plan,
    origin: Origin,
    claim: Option<IdClaim>,
) -> Result<AgentHandle, AgentError> {
    if !plan.owner.is_active() || !shared.plugin.is_active() {
        return Err(AgentError::ShuttingDown);
    }
    let name = match claim.as_ref().map(IdClaim::id) {
        Some(id) => format!("agent:{id}"),
        None => "agent".to_owned(),
    };
    let Ok(scope) = shared.plugin.detached(&name) else {
        return Err(AgentError::ShuttingDown);
    };
    let creation = Arc::new(Creation {
        cancel: CancellationToken::new(),
        finished: watch::Sender::new(false),
        agent: Mutex::new(None),
        settled: OnceLock::new(),
    });
    let steps = creation.clone();
    let loop_shared = shared.clone();
    let teardown = match Teardown::for_scope(&scope, move |_scope| async move {
        steps.cancel.cancel();
        let _ = steps.finished.subscribe().wait_for(|done| *done).await;
        let agent = steps.agent.lock().take();
        if let Some(agent) = agent {
            tear_down(&loop_shared, &agent).await;
        }
    }) {
        Ok(teardown) => teardown,
        Err(_) => {
            scope.dispose().await;
            return Err(AgentError::ShuttingDown);
        }
    };
    if shared.plugin.own(&teardown).is_err() || plan.owner.own(&teardown).is_err() {
        creation.finished.send_replace(true);
        teardown.run().await;
        return Err(AgentError::ShuttingDown);
    }
    let (tx, rx) = oneshot::channel();
    let transaction = {
        let shared = shared.clone();
        let teardown = teardown.clone();
        async move {
            let mut claim = claim;
            let outcome = transact(
                &shared, &creation, &scope, plan, origin, &teardown, &mut claim,
            )
            .await;
            creation.finished.send_replace(true);
            let outcome = match outcome {
                Ok(agent) => Ok(Delivery {
                    handle: Some(AgentHandle::new(agent, teardown)),
                    settled: creation.settled.get().cloned(),
                    runtime: shared.runtime.clone(),
                }),
                Err(err) => {
                    teardown.run().await;
                    drop(claim);
                    Err(err)
                }
            };
            // A caller that has gone away drops the delivery, which tears the agent down.
            drop(tx.send(outcome));
        }
    };
    shared.runtime.spawn(transaction);
    match rx.await {
        Ok(Ok(delivery)) => delivery.take().ok_or(AgentError::ShuttingDown),
        Ok(Err(err)) => Err(err),
        Err(_) => Err(AgentError::ShuttingDown),
    }
}

/// A published agent on its way to the caller. Taken, it settles the registry entry; dropped
/// undelivered (the caller stopped waiting, even after the send), it starts the agent's
/// teardown first, so a second creation of the id waits for that instead of being refused.
struct Delivery {
    handle: Option<AgentHandle>,
    settled: Option<Arc<watch::Sender<bool>>>,
    runtime: tokio::runtime::Handle,
}

impl Delivery {
    fn take(mut self) -> Option<AgentHandle> {
        let handle = self.handle.take();
        self.settle();
        handle
    }

    fn settle(&self) {
        if let Some(settled) = &self.settled {
            settled.send_replace(true);
        }
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.teardown().start();
            self.settle();
            self.runtime.spawn(async move { handle.dispose().await });
        }
    }
}

async fn transact(
    shared: &Arc<Loop>,
    creation: &Creation,
    scope: &Scope,
    plan: Plan,
    origin: Origin,
    teardown: &Teardown,
    claim: &mut Option<IdClaim>,
) -> Result<Arc<LoopAgent>, AgentError> {
    let store = shared.store.clone();
    let persistence = shared.plugin.get::<dyn SessionPersistence>();
    // The id a refused stored log is reported under: the one asked for, never a fresh one.
    let asked_id = match &origin {
        Origin::New { id, .. } => id.clone(),
        Origin::Resume(id) => Some(id.clone()),
    };
    let mut orphans = Vec::new();
    let resumed = matches!(origin, Origin::Resume(_));
    let (spec, next_turn, titled, config) = match origin {
        Origin::New { id, cwd, parent } => {
            let mut spec = SessionSpec::new(cwd);
            if let Some((parent, call)) = parent {
                spec = spec.child_of(parent, call);
            }
            if let Some(id) = id {
                if let Some(persistence) = &persistence {
                    let found = tokio::select! {
                        biased;
                        _ = creation.cancel.cancelled() => return Err(AgentError::ShuttingDown),
                        found = persistence.header(&id) => found,
                    };
                    if found?.is_some() {
                        return Err(AgentError::AlreadyStored { id });
                    }
                }
                spec = spec.with_id(id);
            }
            (spec, 1, false, SessionConfig::default())
        }
        Origin::Resume(id) => {
            let persistence = persistence
                .clone()
                .ok_or(AgentError::PersistenceUnavailable)?;
            let loaded = match persistence.load(&id, store.vocabulary()).await {
                Ok(loaded) => loaded,
                Err(PersistenceError::NotFound { .. }) => return Err(AgentError::NotFound { id }),
                Err(err) => return Err(err.into()),
            };
            if let Some(reason) = stored::open_turn(&loaded.events) {
                return Err(AgentError::InvalidLog { id, reason });
            }
            // Children a crash left mid-turn end with it; the model is told below.
            orphans = crate::orphans::end_orphans(
                &*persistence,
                &store,
                store.vocabulary(),
                &id,
                &loaded.header.cwd,
            )
            .await;
            let next = stored::last_turn(&loaded.events).saturating_add(1);
            let titled = stored::titled(&loaded.events);
            let config = SessionConfig::replay(loaded.events.iter().map(|e| &**e));
            (SessionSpec::restore(loaded), next, titled, config)
        }
    };
    if creation.cancel.is_cancelled() {
        return Err(AgentError::ShuttingDown);
    }
    let session = match store.prepare(spec) {
        Ok(session) => session,
        Err(SessionError::AlreadyExists { id }) => return Err(AgentError::AlreadyLive { id }),
        Err(SessionError::InvalidSeed { index, reason }) => {
            return Err(AgentError::InvalidLog {
                id: asked_id.unwrap_or_else(SessionId::mint),
                reason: format!("event {index}: {reason}"),
            });
        }
        Err(err) => return Err(err.into()),
    };
    let id = session.id().clone();
    match store.enter(&session) {
        Ok(()) => {}
        Err(SessionError::AlreadyExists { id }) => return Err(AgentError::AlreadyLive { id }),
        Err(err) => return Err(err.into()),
    }
    // An owner disposed while an observer (the persistence provider) holds the announcement
    // must not wait for it: the session is withdrawn at once, so nothing of this creation is
    // visible any more, and the announcement rolls itself back when the observer returns.
    let announced = {
        let announce = store.announce(&session);
        tokio::pin!(announce);
        tokio::select! {
            biased;
            announced = &mut announce => announced,
            _ = creation.cancel.cancelled() => {
                store.withdraw(&session);
                creation.finished.send_replace(true);
                announce.await
            }
        }
    };
    if let Err(err) = announced {
        if creation.cancel.is_cancelled() {
            return Err(AgentError::ShuttingDown);
        }
        return Err(announce_error(&id, err));
    }
    // From here the session is live: every early exit detaches it again.
    if creation.cancel.is_cancelled() {
        detach(shared, &session).await;
        return Err(AgentError::ShuttingDown);
    }
    let tools_scope = match scope.child("tools") {
        Ok(tools) => tools,
        Err(_) => {
            detach(shared, &session).await;
            return Err(AgentError::ShuttingDown);
        }
    };
    let agent = LoopAgent::new(AgentParts {
        session: session.clone(),
        options: plan.options,
        scope: scope.clone(),
        tools_scope,
        store,
        setup: plan.setup,
        shared: shared.clone(),
        next_turn,
        titled,
        config,
    });
    let Some(settled) = publish(shared, &agent, teardown, claim.take()) else {
        detach(shared, &session).await;
        return Err(AgentError::AlreadyLive { id });
    };
    *creation.agent.lock() = Some(agent.clone());
    let _ = creation.settled.set(settled);
    drop(plan.owner);
    agent.queue_event(AgentEvent::Created { id: id.clone() });
    agent.drain();
    // The user's `SessionStart` hooks: what they add rides with the first step. They, and
    // every later hook, read where the log is.
    if let Some(persistence) = &persistence
        && agent
            .shared
            .plugin
            .get::<dyn dsh_hooks::HookSource>()
            .is_some()
        && let Ok(Some(location)) = persistence.locate(&id).await
        && let Some(path) = location.path
    {
        let _ = agent.transcript.set(path);
    }
    let start = if resumed { "resume" } else { "startup" };
    if let Some(notice) = crate::hooks::refresh(&agent, Some(start), &creation.cancel).await
        && let Err(err) = dsh_agent::Agent::inject(&*agent, notice)
    {
        tracing::warn!(agent = %id, "the session's start hooks were not heard: {err}");
    }
    if !orphans.is_empty()
        && let Err(err) = dsh_agent::Agent::inject(&*agent, crate::orphans::notice(&orphans))
    {
        tracing::warn!(agent = %id, "the model is not told of its cut-off subagents: {err}");
    }
    Ok(agent)
}

/// Teardown steps 1 to 5 of a published agent, in their load-bearing order: persistence must
/// still be attached when the closing events are written, and the id must not reopen before
/// everything the agent owned is gone (step 6, the scope, follows in the kernel teardown).
async fn tear_down(shared: &Arc<Loop>, agent: &Arc<LoopAgent>) {
    agent.close();
    agent.cancel(CancelCause::Disposed);
    // Injected messages parked on an idle agent are owed to a turn that will never come.
    agent.discard_parked(CancelCause::Disposed);
    agent.when_idle().await;
    unregister(shared, &agent.id);
    agent.queue_event(AgentEvent::Disposed {
        id: agent.id.clone(),
    });
    agent.drain();
    detach(shared, &agent.session).await;
}

async fn detach(shared: &Loop, session: &Session) {
    if let Err(err) = shared.store.detach(session).await {
        tracing::error!(session = %session.id(), "detaching the session failed: {err}");
    }
}

fn announce_error(id: &SessionId, err: SessionError) -> AgentError {
    if let SessionError::Vetoed { cause, .. } = &err
        && matches!(
            cause.downcast_ref::<PersistenceError>(),
            Some(PersistenceError::AlreadyExists { .. })
        )
    {
        return AgentError::AlreadyStored { id: id.clone() };
    }
    match err {
        SessionError::AlreadyExists { id } => AgentError::AlreadyLive { id },
        other => other.into(),
    }
}

fn checked_cwd(cwd: Option<PathBuf>) -> Result<String, AgentError> {
    let cwd = match cwd {
        Some(cwd) => cwd,
        None => std::env::current_dir().map_err(|e| AgentError::InvalidRequest {
            field: "cwd".into(),
            reason: format!("the process's working directory is unreadable: {e}"),
        })?,
    };
    if !cwd.is_absolute() {
        return Err(AgentError::InvalidRequest {
            field: "cwd".into(),
            reason: format!("{} is not absolute", cwd.display()),
        });
    }
    cwd.into_os_string()
        .into_string()
        .map_err(|raw| AgentError::InvalidRequest {
            field: "cwd".into(),
            reason: format!("{} is not UTF-8", PathBuf::from(raw).display()),
        })
}

#[async_trait]
impl AgentFactory for LoopRegistry {
    async fn create(&self, request: CreateAgent) -> Result<AgentHandle, AgentError> {
        create(self, request).await
    }

    async fn resume(&self, request: ResumeAgent) -> Result<AgentHandle, AgentError> {
        resume(self, request).await
    }
}
