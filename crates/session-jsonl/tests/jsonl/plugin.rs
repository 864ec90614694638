//! The shipped `JsonlPlugin` in a real runtime: load, create and append, unload (refused while
//! a session is open, then allowed), reload, and the next session reaching the new instance.

use dsh_kernel::{KernelError, Runtime};
use dsh_session::{
    EventType, Interest, PersistenceBridge, SessionId, SessionPersistence, SessionSpec,
    SessionStore,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPlugin};
use serde_json::json;

use crate::contract::log_path;

fn plugin(dir: &std::path::Path) -> JsonlPlugin {
    JsonlPlugin {
        config: JsonlConfig::new(dir),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jsonl_plugin_loads_refuses_to_unload_under_open_sessions_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    runtime.load(plugin(dir.path())).await.unwrap();
    let store = SessionStore::new();
    let bridge = PersistenceBridge::resolving(runtime.scope().clone());
    store
        .subscribe(runtime.scope(), Interest::All, bridge)
        .unwrap();
    let first_instance = runtime.scope().require::<dyn SessionPersistence>().unwrap();

    let first = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("first").unwrap()))
        .await
        .unwrap();
    first
        .append(&EventType::new("turn/start").unwrap(), &json!({"turn": 1}))
        .unwrap();
    store.flush(first.id()).await.unwrap();

    for refused in [
        runtime.unload("session-jsonl").await,
        runtime.reload(plugin(dir.path())).await,
    ] {
        let err = refused.unwrap_err();
        assert!(matches!(err, KernelError::UnloadRefused { .. }), "{err}");
        assert!(
            err.to_string().contains("first"),
            "names the open session: {err}"
        );
    }
    // Still loaded and still the same instance: the open session kept working.
    first
        .append(
            &EventType::new("turn/end").unwrap(),
            &json!({"turn": 1, "reason": {"kind": "completed"}}),
        )
        .unwrap();
    store.detach(&first).await.unwrap();

    runtime.reload(plugin(dir.path())).await.unwrap();
    let second_instance = runtime.scope().require::<dyn SessionPersistence>().unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first_instance, &second_instance));
    drop(first_instance);

    let second = store
        .create(SessionSpec::new("/w").with_id(SessionId::parse("second").unwrap()))
        .await
        .unwrap();
    second
        .append(&EventType::new("turn/start").unwrap(), &json!({"turn": 1}))
        .unwrap();
    store.flush(second.id()).await.unwrap();
    assert!(
        log_path(dir.path(), second.id()).is_some(),
        "the new instance wrote it"
    );
    let loaded = second_instance
        .inspect(&SessionId::parse("first").unwrap(), store.vocabulary())
        .await
        .unwrap();
    assert_eq!(
        loaded.events.len(),
        2,
        "the first log survived the reload whole"
    );
    store.detach(&second).await.unwrap();

    runtime.unload("session-jsonl").await.unwrap();
    assert!(runtime.scope().get::<dyn SessionPersistence>().is_none());
    runtime.shutdown().await;
    assert_eq!(runtime.live_scopes(), 0);
}
