//! Scope disposal: order, idempotence, memoisation, containment, closed scopes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_kernel::{KernelError, Runtime, ScopePhase};
use futures::poll;
use tokio::sync::oneshot;

use crate::support::{Log, capture_logs, disposer};

#[tokio::test]
async fn disposers_run_lifo_with_children_first() {
    let runtime = Runtime::new();
    let log = Log::default();
    let parent = runtime.scope().child("parent").unwrap();
    parent.add_disposer(disposer(&log, "parent-1")).unwrap();
    let older = parent.child("older").unwrap();
    older.add_disposer(disposer(&log, "older-1")).unwrap();
    let grandchild = older.child("grandchild").unwrap();
    grandchild
        .add_disposer(disposer(&log, "grandchild-1"))
        .unwrap();
    older.add_disposer(disposer(&log, "older-2")).unwrap();
    parent.add_disposer(disposer(&log, "parent-2")).unwrap();
    let newer = parent.child("newer").unwrap();
    newer.add_disposer(disposer(&log, "newer-1")).unwrap();
    newer.add_disposer(disposer(&log, "newer-2")).unwrap();

    parent.dispose().await;

    assert_eq!(
        log.take(),
        [
            "newer-2",
            "newer-1",
            "grandchild-1",
            "older-2",
            "older-1",
            "parent-2",
            "parent-1"
        ]
    );
    for scope in [&parent, &older, &grandchild, &newer] {
        assert_eq!(scope.phase(), ScopePhase::Disposed, "{}", scope.path());
    }
    assert_eq!(grandchild.path(), "root/parent/older/grandchild");
}

#[tokio::test]
async fn a_child_disposed_alone_leaves_its_parent_and_is_not_disposed_twice() {
    let runtime = Runtime::new();
    let log = Log::default();
    let parent = runtime.scope().child("parent").unwrap();
    parent.add_disposer(disposer(&log, "parent")).unwrap();
    let child = parent.child("child").unwrap();
    child.add_disposer(disposer(&log, "child")).unwrap();

    child.dispose().await;
    assert_eq!(log.take(), ["child"]);
    assert!(parent.is_active());

    parent.dispose().await;
    assert_eq!(log.take(), ["parent"]);
}

#[tokio::test]
async fn dispose_is_idempotent() {
    let runtime = Runtime::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let scope = runtime.scope().child("s").unwrap();
    let counter = runs.clone();
    scope
        .add_disposer(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async {}
        })
        .unwrap();
    scope.dispose().await;
    scope.dispose().await;
    scope.clone().dispose().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A later call is ready on its first poll.
    let later = scope.dispose();
    futures::pin_mut!(later);
    assert!(poll!(later).is_ready());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_disposers_all_await_the_same_completion() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("slow").unwrap();
    let (release, gate) = oneshot::channel::<()>();
    let (entered_tx, entered) = oneshot::channel::<()>();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    scope
        .add_disposer(move || async move {
            counter.fetch_add(1, Ordering::SeqCst);
            let _ = entered_tx.send(());
            let _ = gate.await;
        })
        .unwrap();

    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut callers = Vec::new();
    for i in 0..8 {
        let scope = scope.clone();
        let done_tx = done_tx.clone();
        callers.push(tokio::spawn(async move {
            scope.dispose().await;
            done_tx.send(i).unwrap();
        }));
    }
    entered.await.unwrap();
    // The disposer is blocked, so no caller may have completed.
    assert!(done_rx.try_recv().is_err());
    assert_eq!(scope.phase(), ScopePhase::Disposing);

    release.send(()).unwrap();
    for caller in callers {
        caller.await.unwrap();
    }
    let mut finished = Vec::new();
    while let Ok(i) = done_rx.try_recv() {
        finished.push(i);
    }
    assert_eq!(finished.len(), 8);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(scope.phase(), ScopePhase::Disposed);
}

#[tokio::test]
async fn dropping_a_dispose_future_does_not_stop_the_disposal() {
    let runtime = Runtime::new();
    let log = Log::default();
    let scope = runtime.scope().child("s").unwrap();
    scope.add_disposer(disposer(&log, "first")).unwrap();
    let (release, gate) = oneshot::channel::<()>();
    let gated = log.clone();
    scope
        .add_disposer(move || async move {
            let _ = gate.await;
            gated.push("gated");
        })
        .unwrap();

    let mut first = Box::pin(scope.dispose());
    assert!(poll!(first.as_mut()).is_pending());
    drop(first);
    release.send(()).unwrap();

    scope.dispose().await;
    assert_eq!(log.take(), ["gated", "first"]);
}

#[tokio::test]
async fn failing_and_panicking_disposers_are_contained_and_logged() {
    let (logs, _guard) = capture_logs();
    let runtime = Runtime::new();
    let log = Log::default();
    let scope = runtime.scope().child("contained").unwrap();
    scope.add_disposer(disposer(&log, "first")).unwrap();
    scope
        .add_disposer(|| async { Err::<(), _>("disk on fire") })
        .unwrap();
    scope.add_disposer(disposer(&log, "middle")).unwrap();
    scope
        .add_disposer(|| async {
            panic!("disposer exploded");
            #[allow(unreachable_code)]
            ()
        })
        .unwrap();
    scope
        .add_disposer(|| -> std::future::Ready<()> { panic!("disposer closure exploded") })
        .unwrap();
    scope.add_disposer(disposer(&log, "last")).unwrap();

    scope.dispose().await;

    assert_eq!(log.take(), ["last", "middle", "first"]);
    assert_eq!(scope.phase(), ScopePhase::Disposed);
    let text = logs.text();
    assert!(text.contains("disk on fire"), "{text}");
    assert!(text.contains("disposer exploded"), "{text}");
    assert!(text.contains("disposer closure exploded"), "{text}");
    assert!(text.contains("root/contained"), "{text}");
}

#[tokio::test]
async fn a_disposer_that_disposes_its_own_scope_does_not_deadlock() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("self").unwrap();
    let inner = scope.clone();
    let log = Log::default();
    let seen = log.clone();
    scope
        .add_disposer(move || async move {
            inner.dispose().await;
            seen.push("returned");
        })
        .unwrap();
    let child = scope.child("child").unwrap();
    let parent = scope.clone();
    child
        .add_disposer(move || async move { parent.dispose().await })
        .unwrap();
    scope.dispose().await;
    assert_eq!(log.take(), ["returned"]);
}

#[tokio::test]
async fn a_closed_scope_accepts_nothing() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("closed").unwrap();
    scope.dispose().await;

    let closed = |err: KernelError| match err {
        KernelError::ScopeClosed { scope, .. } => assert_eq!(scope, "root/closed"),
        other => panic!("unexpected error {other}"),
    };
    closed(scope.add_disposer(|| async {}).unwrap_err());
    closed(scope.child("late").unwrap_err());
    closed(scope.provide::<u32>(Arc::new(1)).unwrap_err());
    closed(scope.on(|_: &u32| {}).unwrap_err());
    closed(scope.spawn(async {}).unwrap_err());
    assert_eq!(
        scope.get::<u32>(),
        None,
        "a refused provide registered nothing"
    );
    assert_eq!(scope.effect_count(), 0);
}

#[tokio::test]
async fn a_disposer_may_be_withdrawn_without_running() {
    let runtime = Runtime::new();
    let log = Log::default();
    let scope = runtime.scope().child("s").unwrap();
    let other = runtime.scope().child("other").unwrap();
    let keep = scope.add_disposer(disposer(&log, "kept")).unwrap();
    let drop_me = scope.add_disposer(disposer(&log, "withdrawn")).unwrap();
    assert!(!other.remove_disposer(drop_me), "a key of another scope");
    assert!(scope.remove_disposer(drop_me));
    assert!(!scope.remove_disposer(drop_me), "already withdrawn");
    scope.dispose().await;
    assert_eq!(log.take(), ["kept"]);
    assert!(!scope.remove_disposer(keep), "already ran");
}

#[tokio::test]
async fn effects_registered_during_disposal_are_refused() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("s").unwrap();
    let inner = scope.clone();
    let (tx, rx) = oneshot::channel();
    scope
        .add_disposer(move || {
            let _ = tx.send(inner.add_disposer(|| async {}).is_err());
            async {}
        })
        .unwrap();
    scope.dispose().await;
    assert!(rx.await.unwrap());
}
