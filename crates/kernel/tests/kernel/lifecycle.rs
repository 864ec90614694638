//! Cooperative cancellation and safe self-disposal: scope tokens, graceful tasks, and tasks
//! that dispose their own scope or an ancestor.

use std::time::Duration;

use dsh_kernel::{KernelError, Runtime, ScopePhase};
use tokio::sync::{mpsc, oneshot};

use crate::support::Log;
use crate::tasks_support::DropSignal;

/// A deadlock guard, never a wait for something to happen: the awaited work is already due.
const HANG: Duration = Duration::from_secs(20);

#[tokio::test]
async fn the_token_fires_when_disposal_begins_before_any_child_or_effect_is_disposed() {
    let runtime = Runtime::new();
    let parent = runtime.scope().child("parent").unwrap();
    let child = parent.child("child").unwrap();
    let (parent_token, child_token) = (parent.token(), child.token());
    assert!(!parent_token.is_cancelled() && !child_token.is_cancelled());
    let log = Log::default();
    let seen = log.clone();
    let (p, c) = (parent_token.clone(), child_token.clone());
    child
        .add_disposer(move || {
            seen.push(format!(
                "child disposer: parent token {}, child token {}",
                p.is_cancelled(),
                c.is_cancelled()
            ));
            async {}
        })
        .unwrap();

    parent.dispose().await;

    assert_eq!(
        log.take(),
        ["child disposer: parent token true, child token true"]
    );
    // A token asked for after disposal began is already cancelled.
    assert!(parent.token().is_cancelled());
}

#[tokio::test]
async fn a_child_scopes_token_fires_with_its_parent_but_a_detached_scope_keeps_its_own() {
    let runtime = Runtime::new();
    let parent = runtime.scope().child("parent").unwrap();
    let child = parent.child("child").unwrap();
    let detached = parent.detached("outside").unwrap();
    let (child_token, detached_token) = (child.token(), detached.token());

    parent.dispose().await;

    assert!(child_token.is_cancelled());
    assert!(!detached_token.is_cancelled(), "not a child of the parent");
    assert!(detached.is_active());
    detached.dispose().await;
    assert!(detached_token.is_cancelled());
}

#[tokio::test]
async fn a_graceful_task_in_a_child_finishes_its_cleanup_before_the_parents_own_effects_run() {
    // The agent shape: the parent's "stop the loop" disposer must not find the running
    // command already killed mid-cleanup.
    let runtime = Runtime::new();
    let agent = runtime.scope().child("agent").unwrap();
    let log = Log::default();
    let stop_loop = log.clone();
    agent
        .add_disposer(move || {
            stop_loop.push("parent: stop the loop");
            async {}
        })
        .unwrap();
    let step = agent.child("step").unwrap();
    let (started_tx, started) = oneshot::channel();
    let cleanup = log.clone();
    let handle = step
        .spawn_graceful(Duration::from_secs(5), move |token| async move {
            started_tx.send(()).unwrap();
            token.cancelled().await;
            tokio::task::yield_now().await; // cleanup that awaits, as killing a group does
            cleanup.push("command: cleaned up");
            "finished"
        })
        .unwrap();
    started.await.unwrap();

    agent.dispose().await;

    assert_eq!(log.take(), ["command: cleaned up", "parent: stop the loop"]);
    assert_eq!(handle.join().await, Ok("finished"));
}

#[tokio::test(start_paused = true)]
async fn a_graceful_task_that_ignores_its_token_is_aborted_after_its_grace() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("stubborn").unwrap();
    let (dropped_tx, mut dropped) = oneshot::channel();
    let (started_tx, started) = oneshot::channel();
    let handle = scope
        .spawn_graceful(Duration::from_millis(750), move |_token| async move {
            let _signal = DropSignal(Some(dropped_tx));
            started_tx.send(()).unwrap();
            std::future::pending::<()>().await;
        })
        .unwrap();
    started.await.unwrap();
    let begun = tokio::time::Instant::now();

    scope.dispose().await;

    let waited = begun.elapsed();
    assert!(waited >= Duration::from_millis(750), "waited {waited:?}");
    assert!(waited < Duration::from_millis(800), "waited {waited:?}");
    assert!(dropped.try_recv().is_ok(), "the task's future was dropped");
    assert_eq!(handle.join().await, Err(dsh_kernel::TaskError::Cancelled));
}

#[test]
fn a_graceful_task_needs_a_runtime_with_timers() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let runtime = Runtime::new();
        let outcome = runtime
            .scope()
            .spawn_graceful(Duration::from_secs(1), |_token| async {});
        assert!(
            matches!(outcome, Err(KernelError::NoTimer { .. })),
            "{outcome:?}"
        );
        runtime.shutdown().await;
    });
}

#[tokio::test]
async fn a_task_that_disposes_its_own_scope_is_not_aborted_and_resumes_once_the_rest_is_gone() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("self").unwrap();
    let log = Log::default();
    let disposer = log.clone();
    scope
        .add_disposer(move || {
            disposer.push("disposer ran");
            async {}
        })
        .unwrap();
    let (sibling_dropped_tx, sibling_dropped) = oneshot::channel();
    scope
        .spawn(async move {
            let _signal = DropSignal(Some(sibling_dropped_tx));
            std::future::pending::<()>().await;
        })
        .unwrap();
    let (done_tx, done) = oneshot::channel();
    let own = scope.clone();
    let after = log.clone();
    scope
        .spawn(async move {
            own.dispose().await;
            after.push(format!("after dispose: {:?}", own.phase()));
            done_tx.send(()).unwrap();
        })
        .unwrap();

    tokio::time::timeout(HANG, done)
        .await
        .expect("the task resumed")
        .unwrap();
    tokio::time::timeout(HANG, sibling_dropped)
        .await
        .expect("the sibling task was stopped")
        .unwrap();
    assert_eq!(log.take(), ["disposer ran", "after dispose: Disposed"]);
    scope.dispose().await;
}

#[tokio::test]
async fn a_task_that_disposes_an_ancestor_is_spared_and_resumes() {
    let runtime = Runtime::new();
    let agent = runtime.scope().child("agent").unwrap();
    let step = agent.child("step").unwrap();
    let (done_tx, done) = oneshot::channel();
    let ancestor = agent.clone();
    step.spawn(async move {
        ancestor.dispose().await;
        done_tx.send(ancestor.phase()).unwrap();
    })
    .unwrap();

    let phase = tokio::time::timeout(HANG, done)
        .await
        .expect("resumed")
        .unwrap();
    assert_eq!(phase, ScopePhase::Disposed);
    assert_eq!(step.phase(), ScopePhase::Disposed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_called_by_a_task_the_running_disposal_waits_for_returns_at_once() {
    let runtime = Runtime::new();
    let parent = runtime.scope().child("parent").unwrap();
    let scope = parent.child("busy").unwrap();
    let (started_tx, started) = oneshot::channel();
    let (said_tx, mut said) = mpsc::unbounded_channel();
    let (own, ancestor) = (scope.clone(), parent.clone());
    scope
        .spawn_graceful(Duration::from_secs(60), move |token| async move {
            started_tx.send(()).unwrap();
            token.cancelled().await;
            // Both would wait for this very task to end: they must return instead.
            own.dispose().await;
            said_tx.send("own scope returned").unwrap();
            ancestor.dispose().await;
            said_tx.send("ancestor returned").unwrap();
        })
        .unwrap();
    started.await.unwrap();

    tokio::time::timeout(HANG, parent.dispose())
        .await
        .expect("no deadlock");

    assert_eq!(said.recv().await, Some("own scope returned"));
    assert_eq!(said.recv().await, Some("ancestor returned"));
    assert_eq!(scope.phase(), ScopePhase::Disposed);
}
