//! Sessions and the store.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use dsh_kernel::Runtime;
use dsh_session::{
    EventClass, EventType, Interest, SessionError, SessionEvent, SessionId, SessionSpec,
    SessionState, SessionStore,
};
use serde_json::json;

use crate::support::Recorder;

fn kind(name: &str) -> EventType {
    EventType::new(name).unwrap()
}

fn spec(id: &str) -> SessionSpec {
    SessionSpec::new("/work").with_id(SessionId::parse(id).unwrap())
}

#[tokio::test]
async fn appends_are_validated_and_failures_consume_no_seq() {
    let store = SessionStore::new();
    let s = store.create(spec("s")).await.unwrap();
    let todo = kind("todo/write");
    assert!(matches!(
        s.append(&todo, &json!({})),
        Err(SessionError::UnknownEventType { .. })
    ));
    assert!(matches!(
        s.append(&kind("turn/start"), &f64::NAN),
        Err(SessionError::InvalidData { .. })
    ));
    let big = "x".repeat(17 * 1024 * 1024);
    assert!(matches!(
        s.append(&kind("turn/start"), &big),
        Err(SessionError::EventTooLarge { .. })
    ));
    assert_eq!(s.next_seq(), 0);
    store.register(&todo, EventClass::Ignorable).unwrap();
    let e = s.append(&todo, &json!({"items": []})).unwrap();
    assert_eq!(e.seq, 0);
    assert!(e.ignorable, "an ignorable type is stamped");
    let e = s.append(&kind("turn/start"), &json!({"turn": 1})).unwrap();
    assert_eq!(e.seq, 1);
    assert!(!e.ignorable);
    let fifteen = "y".repeat(15 * 1024 * 1024);
    assert_eq!(s.append(&kind("user/message"), &fifteen).unwrap().seq, 2);
}

#[tokio::test]
async fn times_never_go_backwards_and_events_encode() {
    let store = SessionStore::new();
    let s = store.create(spec("t")).await.unwrap();
    let mut last = 0;
    for turn in 1..50 {
        let e = s
            .append(&kind("turn/start"), &json!({ "turn": turn }))
            .unwrap();
        assert!(e.time >= last);
        last = e.time;
        let back = SessionEvent::decode(&e.encode()).unwrap();
        assert_eq!(back.encode(), e.encode());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_are_contiguous_and_observed_once_in_order() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let (a, b) = (Recorder::new("a"), Recorder::new("b"));
    store
        .subscribe(runtime.scope(), Interest::All, a.clone())
        .unwrap();
    store
        .subscribe(runtime.scope(), Interest::All, b.clone())
        .unwrap();
    let s = store.create(spec("c")).await.unwrap();
    let (tasks, per_task) = (16u64, 2_000u64);
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let s = s.clone();
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..per_task {
                    s.append(&kind("user/message"), &json!({"t": t, "i": i}))
                        .unwrap();
                    if i % 500 == 0 {
                        store.flush(s.id()).await.unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let events = s.events();
    assert_eq!(events.len() as u64, tasks * per_task);
    assert!(events.iter().enumerate().all(|(i, e)| e.seq == i as u64));
    for r in [&a, &b] {
        let seen = r.seen.lock().unwrap().clone();
        assert_eq!(seen, (0..tasks * per_task).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn an_append_from_inside_on_append_is_refused() {
    struct Reentrant {
        result: std::sync::Mutex<Option<bool>>,
    }
    #[async_trait::async_trait]
    impl dsh_session::SessionObserver for Reentrant {
        fn name(&self) -> &str {
            "reentrant"
        }
        fn on_append(&self, s: &dsh_session::Session, _e: &Arc<SessionEvent>) {
            let mut result = self.result.lock().unwrap();
            if result.is_none() {
                let inner = s.append(&kind("user/message"), &json!("inner"));
                *result = Some(matches!(inner, Err(SessionError::ReentrantAppend { .. })));
            }
        }
    }
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let reentrant = Arc::new(Reentrant {
        result: std::sync::Mutex::new(None),
    });
    let after = Recorder::new("after");
    store
        .subscribe(runtime.scope(), Interest::All, reentrant.clone())
        .unwrap();
    store
        .subscribe(runtime.scope(), Interest::All, after.clone())
        .unwrap();
    let s = store.create(spec("r")).await.unwrap();
    let outer = s.append(&kind("user/message"), &json!("outer")).unwrap();
    assert_eq!(outer.seq, 0);
    assert_eq!(*reentrant.result.lock().unwrap(), Some(true));
    assert_eq!(s.events().len(), 1, "only the outer event is in the log");
    assert_eq!(
        *after.seen.lock().unwrap(),
        [0],
        "the next observer still ran"
    );
}

#[tokio::test]
async fn duplicate_ids_are_refused_at_prepare_and_enter() {
    let store = SessionStore::new();
    let first = store.prepare(spec("d")).unwrap();
    let second = store.prepare(spec("d")).unwrap();
    store.enter(&first).unwrap();
    assert!(matches!(
        store.enter(&second),
        Err(SessionError::AlreadyExists { .. })
    ));
    assert!(matches!(
        store.prepare(spec("d")),
        Err(SessionError::AlreadyExists { .. })
    ));
    assert!(matches!(
        store.enter(&first),
        Err(SessionError::AlreadyEntered { .. })
    ));
    assert!(
        store.get(first.id()).unwrap().ptr_eq(&first),
        "the winner stays live"
    );
    // A stale handle cannot remove the winner.
    store.detach(&second).await.unwrap();
    assert!(store.get(first.id()).is_some());
    store.detach(&first).await.unwrap();
    assert!(matches!(
        store.enter(&first),
        Err(SessionError::Detached { .. })
    ));
    assert!(matches!(
        first.append(&kind("turn/start"), &json!({"turn": 1})),
        Err(SessionError::Detached { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_enters_have_exactly_one_winner() {
    for _ in 0..50 {
        let store = SessionStore::new();
        let sessions: Vec<_> = (0..8)
            .map(|_| store.prepare(spec("race")).unwrap())
            .collect();
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = sessions
                .iter()
                .map(|s| {
                    let store = &store;
                    scope.spawn(move || store.enter(s).is_ok())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(results.iter().filter(|ok| **ok).count(), 1);
        assert_eq!(store.list_live().len(), 1);
    }
}

#[tokio::test]
async fn pre_announce_appends_arrive_through_published_from() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let r = Recorder::new("r");
    store
        .subscribe(runtime.scope(), Interest::All, r.clone())
        .unwrap();
    let s = store.prepare(spec("p")).unwrap();
    assert_eq!(s.state(), SessionState::Prepared);
    s.append(&kind("turn/start"), &json!({"turn": 1})).unwrap();
    store.enter(&s).unwrap();
    s.append(&kind("user/message"), &json!("hi")).unwrap();
    assert!(
        r.seen.lock().unwrap().is_empty(),
        "nothing published before announce"
    );
    store.announce(&s).await.unwrap();
    assert_eq!(s.state(), SessionState::Announced);
    s.append(
        &kind("turn/end"),
        &json!({"turn": 1, "reason": {"kind": "completed"}}),
    )
    .unwrap();
    assert_eq!(r.calls()[0], "created p from 2");
    assert_eq!(*r.seen.lock().unwrap(), [2]);
    assert!(matches!(
        store.announce(&s).await,
        Err(SessionError::AlreadyAnnounced { .. })
    ));
}

#[tokio::test]
async fn a_veto_rolls_back_and_the_id_is_reusable() {
    for panic in [false, true] {
        let runtime = Runtime::new();
        let store = SessionStore::new();
        let (first, veto, last) = (
            Recorder::new("first"),
            Recorder::new("veto"),
            Recorder::new("last"),
        );
        if panic {
            veto.panic_on_created.store(true, Ordering::SeqCst);
        } else {
            veto.veto.store(true, Ordering::SeqCst);
        }
        for r in [&first, &veto, &last] {
            store
                .subscribe(runtime.scope(), Interest::All, r.clone())
                .unwrap();
        }
        let err = store.create(spec("v")).await.unwrap_err();
        match &err {
            SessionError::Vetoed { observer, .. } => assert_eq!(observer, "veto"),
            other => panic!("unexpected {other}"),
        }
        assert!(store.get(&SessionId::parse("v").unwrap()).is_none());
        assert_eq!(
            last.calls(),
            ["disposed v RolledBack"],
            "never created, still disposed"
        );
        assert_eq!(first.calls(), ["created v from 0", "disposed v RolledBack"]);
        veto.veto.store(false, Ordering::SeqCst);
        veto.panic_on_created.store(false, Ordering::SeqCst);
        let again = store.create(spec("v")).await.unwrap();
        assert_eq!(again.state(), SessionState::Announced);
    }
}

#[tokio::test]
async fn flush_waits_for_every_observer_and_reports_the_first_failure() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let s = store.create(spec("f")).await.unwrap();
    store.flush(s.id()).await.unwrap();
    let (ok, bad) = (Recorder::new("ok"), Recorder::new("bad"));
    bad.fail_flush.store(true, Ordering::SeqCst);
    store
        .subscribe(runtime.scope(), Interest::All, ok.clone())
        .unwrap();
    store
        .subscribe(runtime.scope(), Interest::All, bad.clone())
        .unwrap();
    match store.flush(s.id()).await {
        Err(SessionError::FlushFailed { observer, .. }) => assert_eq!(observer, "bad"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        ok.calls(),
        ["flush f"],
        "the healthy observer still flushed"
    );
    assert!(matches!(
        store.flush(&SessionId::parse("nope").unwrap()).await,
        Err(SessionError::NotLive { .. })
    ));
}

#[tokio::test]
async fn detach_flushes_removes_and_disposes_once() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let r = Recorder::new("r");
    store
        .subscribe(runtime.scope(), Interest::All, r.clone())
        .unwrap();
    let s = store.create(spec("x")).await.unwrap();
    store.detach(&s).await.unwrap();
    store.detach(&s).await.unwrap();
    assert_eq!(
        r.calls(),
        ["created x from 0", "flush x", "disposed x Detached"]
    );
    assert_eq!(s.state(), SessionState::Detached);
    // A never-announced session gets no on_disposed.
    let quiet = store.prepare(spec("q")).unwrap();
    store.enter(&quiet).unwrap();
    store.detach(&quiet).await.unwrap();
    assert!(!r.calls().iter().any(|c| c.starts_with("disposed q")));
}

#[tokio::test]
async fn detach_from_inside_on_created_is_deferred() {
    struct DetachOnCreate {
        store: std::sync::Mutex<Option<Arc<SessionStore>>>,
    }
    #[async_trait::async_trait]
    impl dsh_session::SessionObserver for DetachOnCreate {
        fn name(&self) -> &str {
            "detacher"
        }
        async fn on_created(
            &self,
            s: &dsh_session::Session,
            _from: u64,
        ) -> Result<(), dsh_kernel::BoxError> {
            let store = self.store.lock().unwrap().clone().unwrap();
            store.detach(s).await?;
            assert_eq!(s.state(), SessionState::Entered, "removal is deferred");
            Ok(())
        }
    }
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let detacher = Arc::new(DetachOnCreate {
        store: std::sync::Mutex::new(Some(store.clone())),
    });
    let r = Recorder::new("r");
    store
        .subscribe(runtime.scope(), Interest::All, detacher)
        .unwrap();
    store
        .subscribe(runtime.scope(), Interest::All, r.clone())
        .unwrap();
    let s = store.prepare(spec("y")).unwrap();
    store.enter(&s).unwrap();
    assert!(matches!(
        store.announce(&s).await,
        Err(SessionError::Detached { .. })
    ));
    assert!(store.get(s.id()).is_none());
    assert_eq!(
        r.calls(),
        ["created y from 0", "flush y", "disposed y Detached"]
    );
}

#[tokio::test]
async fn observer_panics_are_contained() {
    let (logs, _guard) = crate::support::capture_logs();
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let (panicky, calm) = (Recorder::new("panicky"), Recorder::new("calm"));
    panicky.panic_every.store(3, Ordering::SeqCst);
    panicky.panic_disposed.store(true, Ordering::SeqCst);
    store
        .subscribe(runtime.scope(), Interest::All, panicky.clone())
        .unwrap();
    store
        .subscribe(runtime.scope(), Interest::All, calm.clone())
        .unwrap();
    let s = store.create(spec("z")).await.unwrap();
    for i in 0..10 {
        assert_eq!(s.append(&kind("user/message"), &json!(i)).unwrap().seq, i);
    }
    assert_eq!(calm.seen.lock().unwrap().len(), 10);
    let warns = logs.text().matches("session observer panicked").count();
    assert_eq!(warns, 3, "one warn per panic (appends 3, 6 and 9)");
    let err = store.detach(&s).await.unwrap_err();
    assert!(matches!(err, SessionError::DisposeFailed { .. }), "{err}");
    assert!(
        calm.calls().contains(&"disposed z Detached".to_owned()),
        "later observers still ran"
    );
    assert!(store.get(s.id()).is_none(), "the removal still happened");
}

#[tokio::test]
async fn snapshots_are_stable_and_a_tail_is_read_from_a_seq() {
    let store = SessionStore::new();
    let s = store.create(spec("h")).await.unwrap();
    let before = s.events();
    assert!(Arc::ptr_eq(&before, &s.events()));
    let entries = [
        ("turn/start", json!({"turn": 1})),
        ("step/start", json!({"turn": 1, "step": 1})),
        (
            "user/message",
            json!({"turn": 1, "step": 1, "message": {"content": "hi"}}),
        ),
        (
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"text": "h"}}),
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"content": ""}, "model": "m"}),
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"content": "he"}, "model": "m", "interrupted": true}),
        ),
        (
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"content": "", "tool_calls": [{"id": "a", "name": "bash", "arguments": "{}"}]}, "model": "m"}),
        ),
        (
            "tool/result",
            json!({"turn": 1, "step": 1, "call_id": "a", "name": "bash", "content": "ok", "is_error": false}),
        ),
        ("step/end", json!({"turn": 1, "step": 1})),
        (
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
    ];
    for (k, data) in &entries {
        s.append(&kind(k), data).unwrap();
    }
    assert_eq!(before.len(), 0, "a held snapshot never changes");
    let tail: Vec<u64> = s.events_from(7).iter().map(|e| e.seq).collect();
    assert_eq!(tail, [7, 8, 9]);
    assert!(s.events_from(10).is_empty() && s.events_from(u64::MAX).is_empty());
}

#[tokio::test]
async fn live_listing_and_interest() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let a = store.create(spec("A")).await.unwrap();
    let b = store.create(spec("B")).await.unwrap();
    let c = store.create(spec("C")).await.unwrap();
    store.detach(&b).await.unwrap();
    let ids: Vec<String> = store
        .list_live()
        .iter()
        .map(|s| s.id().to_string())
        .collect();
    assert_eq!(ids, ["A", "C"]);
    assert!(store.get(b.id()).is_none());
    let only_a = Recorder::new("only-a");
    let sub = runtime.scope().child("sub").unwrap();
    store
        .subscribe(&sub, Interest::Session(a.id().clone()), only_a.clone())
        .unwrap();
    a.append(&kind("user/message"), &json!(1)).unwrap();
    c.append(&kind("user/message"), &json!(2)).unwrap();
    assert_eq!(*only_a.seen.lock().unwrap(), [0]);
    sub.dispose().await;
    a.append(&kind("user/message"), &json!(3)).unwrap();
    assert_eq!(
        *only_a.seen.lock().unwrap(),
        [0],
        "the subscription ended with its scope"
    );
}

#[tokio::test]
async fn seeds_and_create() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let parent = store.create(spec("parent")).await.unwrap();
    for (k, d) in [
        ("turn/start", json!({"turn": 1})),
        ("user/message", json!("x")),
        (
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "completed"}}),
        ),
        ("turn/start", json!({"turn": 2})),
        (
            "turn/end",
            json!({"turn": 2, "reason": {"kind": "completed"}}),
        ),
    ] {
        parent.append(&kind(k), &d).unwrap();
    }
    let events = parent.events().to_vec();
    let mut gap = events.clone();
    gap.remove(3);
    match store.prepare(spec("child").fork(parent.id().clone(), gap)) {
        Err(SessionError::InvalidSeed { index, .. }) => assert_eq!(index, 3),
        other => panic!("unexpected {other:?}"),
    }
    let open = events[..4].to_vec();
    assert!(matches!(
        store.prepare(spec("child").fork(parent.id().clone(), open)),
        Err(SessionError::InvalidSeed { .. })
    ));
    let child = store
        .prepare(spec("child").fork(parent.id().clone(), events.clone()))
        .unwrap();
    assert_eq!(child.header().parent.as_ref(), Some(parent.id()));
    assert_eq!(child.header().seed_len, Some(5));
    assert_eq!(child.next_seq(), 5);

    let veto = Recorder::new("veto");
    veto.veto.store(true, Ordering::SeqCst);
    store
        .subscribe(runtime.scope(), Interest::All, veto.clone())
        .unwrap();
    assert!(store.create(spec("w")).await.is_err());
    assert!(store.get(&SessionId::parse("w").unwrap()).is_none());
    veto.veto.store(false, Ordering::SeqCst);
    assert!(store.create(spec("w")).await.is_ok());
}

#[tokio::test]
async fn relative_cwd_is_refused_and_header_is_normalized() {
    let store = SessionStore::new();
    assert!(matches!(
        store.prepare(SessionSpec::new("rel/dir")),
        Err(SessionError::InvalidHeader { field: "cwd", .. })
    ));
    let s = store.prepare(SessionSpec::new("/a//b/./")).unwrap();
    assert_eq!(s.header().cwd, "/a/b");
    assert_eq!(s.header().version, 1);
    assert!(s.header().created_at > 0);
}

#[tokio::test]
async fn an_observer_whose_drop_subscribes_again_does_not_hang_its_removal() {
    struct Resubscribes {
        store: std::sync::Weak<SessionStore>,
        scope: dsh_kernel::Scope,
    }
    impl dsh_session::SessionObserver for Resubscribes {
        fn name(&self) -> &str {
            "resubscribes"
        }
    }
    impl Drop for Resubscribes {
        fn drop(&mut self) {
            // Touches the observer list from inside the removed observer's own drop.
            if let Some(store) = self.store.upgrade() {
                let _ = store.subscribe(&self.scope, Interest::All, Arc::new(Recorder::default()));
            }
        }
    }
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let watcher = runtime.scope().child("watcher").unwrap();
    let observer = Arc::new(Resubscribes {
        store: Arc::downgrade(&store),
        scope: runtime.scope().clone(),
    });
    store.subscribe(&watcher, Interest::All, observer).unwrap();

    tokio::time::timeout(std::time::Duration::from_secs(20), watcher.dispose())
        .await
        .expect("no deadlock");
    runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_withdrawn_while_announcing_vanishes_at_once_and_rolls_back_when_observers_return()
 {
    struct Held {
        entered: tokio::sync::Semaphore,
        release: tokio::sync::Semaphore,
    }
    #[async_trait::async_trait]
    impl dsh_session::SessionObserver for Held {
        fn name(&self) -> &str {
            "held"
        }
        async fn on_created(
            &self,
            _s: &dsh_session::Session,
            _from: u64,
        ) -> Result<(), dsh_kernel::BoxError> {
            self.entered.add_permits(1);
            self.release.acquire().await.unwrap().forget();
            Ok(())
        }
    }
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let recorder = Arc::new(Recorder::default());
    store
        .subscribe(runtime.scope(), Interest::All, recorder.clone())
        .unwrap();
    let held = Arc::new(Held {
        entered: tokio::sync::Semaphore::new(0),
        release: tokio::sync::Semaphore::new(0),
    });
    store
        .subscribe(runtime.scope(), Interest::All, held.clone())
        .unwrap();
    let session = store.prepare(spec("w")).unwrap();
    assert!(!store.withdraw(&session), "not announcing yet");
    store.enter(&session).unwrap();
    let announcing = {
        let (store, session) = (store.clone(), session.clone());
        tokio::spawn(async move { store.announce(&session).await })
    };
    held.entered.acquire().await.unwrap().forget();
    assert!(store.withdraw(&session));
    assert!(store.list_live().is_empty());
    assert!(store.get(session.id()).is_none());
    // One permit for this announcement, one for the creation that reuses the id below.
    held.release.add_permits(2);
    assert!(matches!(
        announcing.await.unwrap(),
        Err(SessionError::Detached { .. })
    ));
    let calls = recorder.calls.lock().unwrap().clone();
    assert_eq!(
        calls.last().map(String::as_str),
        Some("disposed w RolledBack"),
        "{calls:?}"
    );
    // The id is free again.
    store.create(spec("w")).await.unwrap();
}

#[tokio::test]
async fn an_ephemeral_notice_reaches_observers_in_order_and_is_never_stored() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let seen = Recorder::new("seen");
    store
        .subscribe(runtime.scope(), Interest::All, seen.clone())
        .unwrap();
    let progress = kind("tool/progress");
    let s = store.create(spec("n")).await.unwrap();
    s.append(&kind("turn/start"), &json!({"turn": 1})).unwrap();
    assert!(s.notify(&progress, &json!("a")).unwrap());
    assert!(s.notify(&progress, &json!("b")).unwrap());
    s.append(&kind("turn/end"), &json!({"turn": 1})).unwrap();
    assert_eq!(
        *seen.order.lock().unwrap(),
        ["e0", "n1:\"a\"", "n1:\"b\"", "e1"]
    );
    assert_eq!(s.events().len(), 2, "notices are not events");
    store.detach(&s).await.unwrap();
    assert!(!s.notify(&progress, &json!("late")).unwrap(), "told nobody");
    assert_eq!(seen.order.lock().unwrap().len(), 4);
    runtime.shutdown().await;
}
