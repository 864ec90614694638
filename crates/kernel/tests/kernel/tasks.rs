//! Scope-owned tasks: cancelled and awaited on dispose, contained panics, self-withdrawal.

use std::sync::Arc;

use dsh_kernel::{KernelError, Runtime, TaskError};
use tokio::sync::oneshot;

use crate::tasks_support::DropSignal;

#[tokio::test]
async fn dispose_cancels_and_awaits_its_tasks() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("tasks").unwrap();
    let (dropped_tx, mut dropped) = oneshot::channel();
    let (started_tx, started) = oneshot::channel();
    let handle = scope
        .spawn(async move {
            let _signal = DropSignal(Some(dropped_tx));
            started_tx.send(()).unwrap();
            std::future::pending::<()>().await;
        })
        .unwrap();
    started.await.unwrap();
    assert!(dropped.try_recv().is_err(), "still running");

    scope.dispose().await;

    // When dispose returns, the task's future has been dropped.
    assert!(dropped.try_recv().is_ok());
    assert!(handle.is_finished());
    assert_eq!(handle.join().await, Err(TaskError::Cancelled));
}

#[tokio::test]
async fn tasks_are_cancelled_in_lifo_order_with_other_effects() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("order").unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<&'static str>();
    let early = tx.clone();
    scope
        .add_disposer(move || {
            early.send("disposer-before-task").unwrap();
            async {}
        })
        .unwrap();
    let (started_tx, started) = oneshot::channel();
    let in_task = tx.clone();
    scope
        .spawn(async move {
            struct Note(std::sync::mpsc::Sender<&'static str>);
            impl Drop for Note {
                fn drop(&mut self) {
                    self.0.send("task-dropped").unwrap();
                }
            }
            let _note = Note(in_task);
            started_tx.send(()).unwrap();
            std::future::pending::<()>().await;
        })
        .unwrap();
    scope
        .add_disposer(move || {
            tx.send("disposer-after-task").unwrap();
            async {}
        })
        .unwrap();
    started.await.unwrap();
    scope.dispose().await;
    let order: Vec<_> = rx.try_iter().collect();
    assert_eq!(
        order,
        [
            "disposer-after-task",
            "task-dropped",
            "disposer-before-task"
        ]
    );
}

#[tokio::test]
async fn a_finished_task_returns_its_output_and_withdraws_its_effect() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("short").unwrap();
    let handle = scope.spawn(async { 6 * 7 }).unwrap();
    assert_eq!(handle.join().await, Ok(42));
    assert_eq!(scope.effect_count(), 0);
}

#[tokio::test]
async fn a_panicking_task_is_contained() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("panicky").unwrap();
    let handle = scope.spawn(async { panic!("task blew up") }).unwrap();
    match handle.join().await {
        Err(TaskError::Panicked { message }) => assert_eq!(message, "task blew up"),
        other => panic!("unexpected {other:?}"),
    }
    let survivor = scope.spawn(async { "still fine" }).unwrap();
    assert_eq!(survivor.join().await, Ok("still fine"));
    scope.dispose().await;
}

#[tokio::test]
async fn abort_cancels_one_task() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("abort").unwrap();
    let handle = scope.spawn(std::future::pending::<()>()).unwrap();
    handle.abort();
    assert_eq!(handle.join().await, Err(TaskError::Cancelled));
    scope.dispose().await;
}

#[test]
fn spawning_outside_a_tokio_runtime_is_an_error() {
    let runtime = Runtime::new();
    let err = runtime.scope().spawn(async {}).unwrap_err();
    assert!(matches!(err, KernelError::NoRuntime { .. }), "{err}");
    assert_eq!(runtime.scope().effect_count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tasks_across_threads_are_all_cancelled() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("many").unwrap();
    let live = Arc::new(());
    let mut started = Vec::new();
    for _ in 0..64 {
        let live = live.clone();
        let (tx, rx) = oneshot::channel();
        started.push(rx);
        scope
            .spawn(async move {
                let _live = live;
                tx.send(()).unwrap();
                std::future::pending::<()>().await;
            })
            .unwrap();
    }
    for rx in started {
        rx.await.unwrap();
    }
    assert_eq!(Arc::strong_count(&live), 65);
    scope.dispose().await;
    assert_eq!(
        Arc::strong_count(&live),
        1,
        "every task's future was dropped"
    );
}
