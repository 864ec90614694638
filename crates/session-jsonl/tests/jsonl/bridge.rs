//! The persistence bridge wired to a real store and the JSONL
//! provider.

use std::sync::Arc;

use dsh_kernel::Runtime;
use dsh_session::{
    EventType, Interest, PersistenceBridge, SessionError, SessionId, SessionPersistence,
    SessionSpec, SessionStore,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use serde_json::json;

use crate::contract::log_path;

fn kind(name: &str) -> EventType {
    EventType::new(name).unwrap()
}

fn wired(dir: &std::path::Path, runtime: &Runtime) -> (Arc<SessionStore>, Arc<JsonlPersistence>) {
    let persistence = JsonlPersistence::new(JsonlConfig::new(dir)).unwrap();
    let store = SessionStore::new();
    let bridge = PersistenceBridge::new(persistence.clone());
    store
        .subscribe(runtime.scope(), Interest::All, bridge)
        .unwrap();
    (store, persistence)
}

fn lines(dir: &std::path::Path, id: &SessionId) -> Vec<String> {
    std::fs::read_to_string(log_path(dir, id).unwrap())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_persists_forks_resumes_and_closing_turns() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let (store, persistence) = wired(dir.path(), &runtime);
    let s = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("main").unwrap()))
        .await
        .unwrap();
    s.append(&kind("turn/start"), &json!({"turn": 1})).unwrap();
    s.append(
        &kind("user/message"),
        &json!({"turn": 1, "step": 1, "message": {"content": "hi"}}),
    )
    .unwrap();
    store.flush(s.id()).await.unwrap();
    assert_eq!(
        lines(dir.path(), s.id()).len(),
        3,
        "header and two events are durable"
    );
    s.append(
        &kind("turn/end"),
        &json!({"turn": 1, "reason": {"kind": "completed"}}),
    )
    .unwrap();
    store.detach(&s).await.unwrap();
    let stored = lines(dir.path(), s.id());
    assert_eq!(stored.len(), 4);
    assert!(
        stored[3].contains("turn/end"),
        "detach flushed the closing turn/end"
    );

    // A fork's seed is stored exactly once.
    let seed = s.events().to_vec();
    let child = store
        .create(
            SessionSpec::new("/w")
                .with_id(SessionId::parse("child").unwrap())
                .fork(s.id().clone(), seed),
        )
        .await
        .unwrap();
    child
        .append(&kind("turn/start"), &json!({"turn": 2}))
        .unwrap();
    child
        .append(
            &kind("turn/end"),
            &json!({"turn": 2, "reason": {"kind": "completed"}}),
        )
        .unwrap();
    store.detach(&child).await.unwrap();
    let child_lines = lines(dir.path(), child.id());
    assert_eq!(child_lines.len(), 6);
    assert!(
        child_lines[0].contains("\"parent\":\"main\"") && child_lines[0].contains("\"seed_len\":3")
    );

    // A resumed session re-appends nothing and continues the seq.
    let loaded = persistence.load(s.id(), store.vocabulary()).await.unwrap();
    let resumed = store.create(SessionSpec::restore(loaded)).await.unwrap();
    assert_eq!(resumed.next_seq(), 3);
    resumed
        .append(&kind("turn/start"), &json!({"turn": 2}))
        .unwrap();
    resumed
        .append(
            &kind("turn/end"),
            &json!({"turn": 2, "reason": {"kind": "completed"}}),
        )
        .unwrap();
    store.detach(&resumed).await.unwrap();
    let after = lines(dir.path(), s.id());
    assert_eq!(after.len(), 6);
    assert!(after[4].starts_with("{\"seq\":3,"));

    // A second create of a stored id is vetoed by the bridge.
    match store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("main").unwrap()))
        .await
    {
        Err(SessionError::Vetoed {
            observer, cause, ..
        }) => {
            assert_eq!(observer, "persistence-bridge");
            assert!(
                cause.to_string().contains("load or resume it instead"),
                "{cause}"
            );
        }
        other => panic!("expected a veto, got {other:?}"),
    }
    persistence.shutdown().await.unwrap();
}

/// With the real provider: many tasks append to one session with periodic flushes; the
/// file holds every event once, in seq order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_reach_the_file_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let (store, persistence) = wired(dir.path(), &runtime);
    let s = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("many").unwrap()))
        .await
        .unwrap();
    let (tasks, per_task) = (64u64, 500u64);
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (s, store) = (s.clone(), store.clone());
            tokio::spawn(async move {
                for i in 0..per_task {
                    s.append(&kind("user/message"), &json!({ "t": t, "i": i }))
                        .unwrap();
                    if i % 100 == 0 {
                        store.flush(s.id()).await.unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    store.detach(&s).await.unwrap();
    let stored = lines(dir.path(), s.id());
    assert_eq!(stored.len() as u64, 1 + tasks * per_task);
    for (i, line) in stored[1..].iter().enumerate() {
        assert!(
            line.starts_with(&format!("{{\"seq\":{i},")),
            "line {}: {line}",
            i + 2
        );
    }
    persistence.shutdown().await.unwrap();
}

/// A provider that fails makes the next flush and the detach fail; nothing is reported
/// durable that is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_fails_the_next_barrier() {
    use std::sync::atomic::{AtomicU32, Ordering};
    struct FailAll(AtomicU32);
    impl dsh_session_jsonl::FsOps for FailAll {
        fn write(&self, _file: &std::fs::File, _bytes: &[u8]) -> std::io::Result<()> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let persistence = JsonlPersistence::with_fs(
        JsonlConfig::new(dir.path()),
        Arc::new(FailAll(AtomicU32::new(0))),
    )
    .unwrap();
    let store = SessionStore::new();
    store
        .subscribe(
            runtime.scope(),
            Interest::All,
            PersistenceBridge::new(persistence.clone()),
        )
        .unwrap();
    let s = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("doomed").unwrap()))
        .await
        .unwrap();
    s.append(&kind("turn/start"), &json!({"turn": 1})).unwrap();
    match store.flush(s.id()).await {
        Err(SessionError::FlushFailed {
            observer, cause, ..
        }) => {
            assert_eq!(observer, "persistence-bridge");
            assert!(cause.to_string().contains("disk on fire"), "{cause}");
        }
        other => panic!("expected FlushFailed, got {other:?}"),
    }
    assert!(
        store.detach(&s).await.is_err(),
        "detach reports the failure too"
    );
    assert!(store.get(s.id()).is_none(), "the session was still removed");
    assert!(
        log_path(dir.path(), s.id()).is_none(),
        "nothing was published as durable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_before_the_announcement_fails_instead_of_claiming_durability() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let (store, _persistence) = wired(dir.path(), &runtime);
    let s = store
        .prepare(SessionSpec::new("/w").with_id(SessionId::parse("early").unwrap()))
        .unwrap();
    store.enter(&s).unwrap();
    s.append(&kind("user/message"), &json!({"n": 1})).unwrap();
    assert!(matches!(
        store.flush(s.id()).await,
        Err(SessionError::NotAnnounced { .. })
    ));
    store.announce(&s).await.unwrap();
    store.flush(s.id()).await.unwrap();
    assert_eq!(
        lines(dir.path(), s.id()).len(),
        2,
        "after the announcement the barrier holds"
    );
    store.detach(&s).await.unwrap();
}

/// Delegates to the JSONL provider, but its `append` panics.
struct PanickingAppend(Arc<JsonlPersistence>);

#[async_trait::async_trait]
impl SessionPersistence for PanickingAppend {
    fn name(&self) -> &'static str {
        "panicking"
    }
    async fn create(
        &self,
        h: &dsh_session::SessionHeader,
        o: dsh_session::Origin,
    ) -> Result<(), dsh_session::PersistenceError> {
        self.0.create(h, o).await
    }
    async fn append(
        &self,
        _: &SessionId,
        _: &[Arc<dsh_session::SessionEvent>],
    ) -> Result<(), dsh_session::PersistenceError> {
        panic!("provider bug in append")
    }
    async fn flush(&self, id: &SessionId) -> Result<(), dsh_session::PersistenceError> {
        self.0.flush(id).await
    }
    async fn close(
        &self,
        id: &SessionId,
        i: dsh_session::CloseIntent,
    ) -> Result<(), dsh_session::PersistenceError> {
        self.0.close(id, i).await
    }
    async fn load(
        &self,
        id: &SessionId,
        k: &dsh_session::EventVocabulary,
    ) -> Result<dsh_session::LoadedSession, dsh_session::PersistenceError> {
        self.0.load(id, k).await
    }
    async fn inspect(
        &self,
        id: &SessionId,
        k: &dsh_session::EventVocabulary,
    ) -> Result<dsh_session::LoadedSession, dsh_session::PersistenceError> {
        self.0.inspect(id, k).await
    }
    async fn header(
        &self,
        id: &SessionId,
    ) -> Result<Option<dsh_session::SessionHeader>, dsh_session::PersistenceError> {
        self.0.header(id).await
    }
    async fn list(
        &self,
        q: &dsh_session::ListQuery,
    ) -> Result<dsh_session::SessionListing, dsh_session::PersistenceError> {
        self.0.list(q).await
    }
    async fn locate(
        &self,
        id: &SessionId,
    ) -> Result<Option<dsh_session::SessionLocation>, dsh_session::PersistenceError> {
        self.0.locate(id).await
    }
    async fn delete(&self, id: &SessionId) -> Result<(), dsh_session::PersistenceError> {
        self.0.delete(id).await
    }
    async fn shutdown(&self) -> Result<(), dsh_session::PersistenceError> {
        self.0.shutdown().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_panicking_in_append_fails_the_session_and_barriers_answer_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let inner = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let store = SessionStore::new();
    store
        .subscribe(
            runtime.scope(),
            Interest::All,
            PersistenceBridge::new(Arc::new(PanickingAppend(inner))),
        )
        .unwrap();
    let s = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("panics").unwrap()))
        .await
        .unwrap();
    s.append(&kind("user/message"), &json!({"n": 1})).unwrap();
    let bounded = std::time::Duration::from_secs(10);
    let flushed = tokio::time::timeout(bounded, store.flush(s.id()))
        .await
        .expect("flush answered");
    let Err(SessionError::FlushFailed { cause, .. }) = flushed else {
        panic!("{flushed:?}");
    };
    let failed = cause
        .downcast_ref::<dsh_session::PersistenceFailed>()
        .expect("the sticky failure is a typed error");
    assert_eq!(failed.session.as_str(), "panics");
    assert!(
        matches!(*failed.cause, dsh_kernel::contain::Failure::Panic(_)),
        "{failed:?}"
    );
    let again = tokio::time::timeout(bounded, store.flush(s.id()))
        .await
        .expect("flush answered");
    assert!(again.is_err(), "the failure is sticky");
    let detached = tokio::time::timeout(bounded, store.detach(&s))
        .await
        .expect("detach answered");
    assert!(detached.is_err(), "detach reports the failure");
}
