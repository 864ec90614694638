//! Creations and resumes racing the shutdown of their plugin or owner, with persistence held
//! mid-call: nothing of a racing call stays registered or live.

use std::sync::{Arc, Mutex};

use dsh_agent::{AgentError, AgentRegistry, CreateAgent, ResumeAgent};
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, LoadedSession, Origin, PersistenceError, SessionEvent,
    SessionHeader, SessionId, SessionListing, SessionLocation, SessionPersistence,
};
use dsh_test_providers::providers::{JsonlConfig, JsonlPersistence};

use crate::support::*;

/// The JSONL provider with a gate in front of `header` and `load`.
struct Held {
    inner: Arc<JsonlPersistence>,
    header_gate: Mutex<Option<Gate>>,
    load_gate: Mutex<Option<Gate>>,
    create_gate: Mutex<Option<Gate>>,
    /// Hands out logs whose final `turn/end` is missing, as a buggy provider might.
    unbalanced: std::sync::atomic::AtomicBool,
    /// Hands out logs missing their second event (a seq gap), as a buggy provider might.
    gapped: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl SessionPersistence for Held {
    fn name(&self) -> &'static str {
        "held"
    }
    async fn create(&self, header: &SessionHeader, origin: Origin) -> Result<(), PersistenceError> {
        let gate = self.create_gate.lock().unwrap().take();
        if let Some(gate) = gate {
            gate.pass_for_tests().await;
        }
        self.inner.create(header, origin).await
    }
    async fn append(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        self.inner.append(id, events).await
    }
    async fn flush(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.inner.flush(id).await
    }
    async fn close(&self, id: &SessionId, intent: CloseIntent) -> Result<(), PersistenceError> {
        self.inner.close(id, intent).await
    }
    async fn load(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError> {
        let gate = self.load_gate.lock().unwrap().take();
        if let Some(gate) = gate {
            gate.pass_for_tests().await;
        }
        let mut loaded = self.inner.load(id, known).await?;
        if self.unbalanced.load(std::sync::atomic::Ordering::SeqCst)
            && loaded
                .events
                .last()
                .is_some_and(|e| e.kind.as_str() == "turn/end")
        {
            loaded.events.pop();
        }
        if self.gapped.load(std::sync::atomic::Ordering::SeqCst) && loaded.events.len() > 1 {
            loaded.events.remove(1);
        }
        Ok(loaded)
    }
    async fn inspect(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError> {
        self.inner.inspect(id, known).await
    }
    async fn header(&self, id: &SessionId) -> Result<Option<SessionHeader>, PersistenceError> {
        let gate = self.header_gate.lock().unwrap().take();
        if let Some(gate) = gate {
            gate.pass_for_tests().await;
        }
        self.inner.header(id).await
    }
    async fn list(&self, query: &ListQuery) -> Result<SessionListing, PersistenceError> {
        self.inner.list(query).await
    }
    async fn locate(&self, id: &SessionId) -> Result<Option<SessionLocation>, PersistenceError> {
        self.inner.locate(id).await
    }
    async fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.inner.delete(id).await
    }
    async fn shutdown(&self) -> Result<(), PersistenceError> {
        self.inner.shutdown().await
    }
}

struct HeldPlugin(Arc<Held>);

#[async_trait::async_trait]
impl Plugin for HeldPlugin {
    fn name(&self) -> &str {
        "held-persistence"
    }
    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.provide::<dyn SessionPersistence>(self.0.clone())?;
        Ok(())
    }
}

async fn harness() -> (Harness, Arc<Held>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let held = Arc::new(Held {
        inner: JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap(),
        header_gate: Mutex::new(None),
        load_gate: Mutex::new(None),
        create_gate: Mutex::new(None),
        unbalanced: Default::default(),
        gapped: Default::default(),
    });
    h.runtime.load(HeldPlugin(held.clone())).await.unwrap();
    h.store
        .subscribe(
            h.runtime.scope(),
            dsh_session::Interest::All,
            dsh_session::PersistenceBridge::resolving(h.runtime.scope().clone()),
        )
        .unwrap();
    (h, held, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_held_in_persistence_returns_shutting_down_when_the_plugin_unloads() {
    let (h, held, _dir) = harness().await;
    let gate = Gate::default();
    *held.header_gate.lock().unwrap() = Some(gate.clone());
    let registry: Arc<dyn AgentRegistry> = h.registry();
    let creating = {
        let (registry, owner) = (registry.clone(), h.owner());
        tokio::spawn(async move {
            registry
                .create(CreateAgent::new(owner).with_id(id("x")).with_cwd("/w"))
                .await
        })
    };
    gate.entered().await;
    h.runtime.unload("agent-loop").await.unwrap();
    assert!(registry.list().is_empty());
    assert!(h.store.list_live().is_empty());
    gate.release();
    assert!(matches!(
        creating.await.unwrap(),
        Err(AgentError::ShuttingDown)
    ));
    assert_eq!(h.count("agent/created"), h.count("agent/disposed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_held_in_persistence_returns_shutting_down_when_its_owner_is_disposed() {
    let (h, held, _dir) = harness().await;
    let gate = Gate::default();
    *held.header_gate.lock().unwrap() = Some(gate.clone());
    let owner = h.runtime.scope().child("connection").unwrap();
    let creating = {
        let (registry, owner) = (h.registry(), owner.clone());
        tokio::spawn(async move {
            registry
                .create(CreateAgent::new(owner).with_id(id("x")).with_cwd("/w"))
                .await
        })
    };
    gate.entered().await;
    owner.dispose().await;
    assert!(h.registry().list().is_empty());
    assert!(h.store.list_live().is_empty());
    gate.release();
    assert!(matches!(
        creating.await.unwrap(),
        Err(AgentError::ShuttingDown)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_held_in_load_rolls_back_when_the_plugin_unloads_and_leaves_the_log_alone() {
    let (h, held, dir) = harness().await;
    let first = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("kept"))
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    first.agent().send(user("a")).unwrap().await;
    first.dispose().await;
    let file = stored_log(dir.path());
    let before = std::fs::read(&file).unwrap();
    let gate = Gate::default();
    *held.load_gate.lock().unwrap() = Some(gate.clone());
    let resuming = {
        let (registry, owner) = (h.registry(), h.owner());
        tokio::spawn(async move { registry.resume(ResumeAgent::new(owner, id("kept"))).await })
    };
    gate.entered().await;
    let unloading = {
        let runtime = h.runtime.clone();
        tokio::spawn(async move { runtime.unload("agent-loop").await })
    };
    // Release only once the unload has begun: a new creation is then refused.
    loop {
        match h
            .registry()
            .create(CreateAgent::new(h.owner()).with_cwd("/w"))
            .await
        {
            Err(AgentError::ShuttingDown) => break,
            Ok(extra) => extra.dispose().await,
            Err(other) => panic!("{other:?}"),
        }
        tokio::task::yield_now().await;
    }
    gate.release();
    unloading.await.unwrap().unwrap();
    assert!(matches!(
        resuming.await.unwrap(),
        Err(AgentError::ShuttingDown)
    ));
    assert!(h.store.list_live().is_empty());
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the stored log is unchanged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_log_that_leaves_a_turn_open_is_refused_and_nothing_is_published() {
    let (h, held, _dir) = harness().await;
    let first = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("open"))
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    first.agent().send(user("a")).unwrap().await;
    first.dispose().await;
    held.unbalanced
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let resumed = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), id("open")))
        .await;
    assert!(
        matches!(&resumed, Err(AgentError::InvalidLog { reason, .. }) if reason.contains("turn")),
        "{resumed:?}"
    );
    assert!(h.registry().list().is_empty() && h.store.list_live().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_log_the_store_refuses_is_reported_under_its_own_id_and_why() {
    let (h, held, _dir) = harness().await;
    let first = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("gapped"))
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    first.agent().send(user("a")).unwrap().await;
    first.dispose().await;
    held.gapped.store(true, std::sync::atomic::Ordering::SeqCst);
    let resumed = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), id("gapped")))
        .await;
    match &resumed {
        Err(AgentError::InvalidLog { id: named, reason }) => {
            assert_eq!(
                named,
                &id("gapped"),
                "the stored session's id, not a fresh one"
            );
            assert!(reason.contains("seq 2 where 1 was expected"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(h.registry().list().is_empty() && h.store.list_live().is_empty());
    held.gapped
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let again = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), id("gapped")))
        .await;
    assert!(
        again.is_ok(),
        "the refused resume gave its claim on the id back: {again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposing_the_owner_during_a_held_announcement_withdraws_it_without_waiting() {
    let (h, held, _dir) = harness().await;
    let stored = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("stored"))
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    stored.agent().send(user("a")).unwrap().await;
    stored.dispose().await;
    for resume in [false, true] {
        let gate = Gate::default();
        *held.create_gate.lock().unwrap() = Some(gate.clone());
        let owner = h.runtime.scope().child("connection").unwrap();
        let call = {
            let (registry, owner) = (h.registry(), owner.clone());
            tokio::spawn(async move {
                if resume {
                    registry.resume(ResumeAgent::new(owner, id("stored"))).await
                } else {
                    registry
                        .create(CreateAgent::new(owner).with_id(id("fresh")).with_cwd("/w"))
                        .await
                }
            })
        };
        // The session is live and being announced; persistence holds the announcement.
        gate.entered().await;
        owner.dispose().await;
        assert!(h.registry().list().is_empty(), "resume: {resume}");
        assert!(h.store.list_live().is_empty(), "resume: {resume}");
        gate.release();
        let outcome = call.await.unwrap();
        assert!(
            matches!(outcome, Err(AgentError::ShuttingDown)),
            "resume {resume}: {outcome:?}"
        );
    }
}
