//! Nothing foreign is dropped under a kernel lock, and nothing leaks silently: services,
//! listeners and disposers whose `Drop` calls back into the kernel, runtimes dropped without a
//! shutdown, reference cycles through services, tasks aborted before they ever ran.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dsh_kernel::{Runtime, Scope, TaskError};
use tokio::sync::oneshot;

use crate::support::capture_logs;
use crate::tasks_support::DropSignal;

const HANG: Duration = Duration::from_secs(20);

/// Calls back into the kernel when dropped: looks a service up, emits, and reads the scope.
struct CallsBack {
    scope: Scope,
    dropped: Arc<AtomicBool>,
}

impl Drop for CallsBack {
    fn drop(&mut self) {
        let _ = self.scope.get::<String>();
        self.scope.emit(Noise);
        let _ = self.scope.effect_count();
        self.dropped.store(true, Ordering::SeqCst);
    }
}

struct Noise;

fn calls_back(scope: &Scope) -> (CallsBack, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let value = CallsBack {
        scope: scope.clone(),
        dropped: dropped.clone(),
    };
    (value, dropped)
}

#[tokio::test]
async fn a_service_whose_drop_calls_the_kernel_does_not_hang_dispose() {
    let runtime = Runtime::new();
    runtime.scope().on(|_: &Noise| {}).unwrap();
    let provider = runtime.scope().child("provider").unwrap();
    let (service, dropped) = calls_back(runtime.scope());
    provider.provide::<CallsBack>(Arc::new(service)).unwrap();

    tokio::time::timeout(HANG, provider.dispose())
        .await
        .expect("no deadlock");

    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_refused_duplicate_service_is_dropped_outside_the_kernels_locks() {
    let runtime = Runtime::new();
    runtime
        .scope()
        .provide::<CallsBack>(Arc::new(calls_back(runtime.scope()).0))
        .unwrap();
    let (second, dropped) = calls_back(runtime.scope());
    let outcome = runtime.scope().provide::<CallsBack>(Arc::new(second));
    assert!(outcome.is_err());
    assert!(dropped.load(Ordering::SeqCst));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_listener_whose_captured_state_calls_the_kernel_on_drop_does_not_hang_dispose() {
    let runtime = Runtime::new();
    runtime.scope().on(|_: &Noise| {}).unwrap();
    let renderer = runtime.scope().child("renderer").unwrap();
    let (state, dropped) = calls_back(runtime.scope());
    renderer
        .on(move |_: &Noise| {
            let _keep = &state;
        })
        .unwrap();

    tokio::time::timeout(HANG, renderer.dispose())
        .await
        .expect("no deadlock");

    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_withdrawn_disposer_is_dropped_outside_the_scopes_lock() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("s").unwrap();
    let (state, dropped) = calls_back(&scope);
    let key = scope
        .add_disposer(move || {
            let _keep = state;
            async {}
        })
        .unwrap();
    assert!(scope.remove_disposer(key));
    assert!(dropped.load(Ordering::SeqCst));
    scope.dispose().await;
}

#[tokio::test]
async fn dropping_a_runtime_without_shutdown_aborts_every_task_and_logs_an_error() {
    let (logs, _guard) = capture_logs();
    let runtime = Runtime::new();
    let child = runtime.scope().child("plugin:x").unwrap();
    let detached = runtime.scope().detached("agent").unwrap();
    let mut signals = Vec::new();
    for scope in [runtime.scope().clone(), child, detached] {
        let (tx, rx) = oneshot::channel();
        scope
            .spawn(async move {
                let _signal = DropSignal(Some(tx));
                std::future::pending::<()>().await;
            })
            .unwrap();
        signals.push(rx);
    }

    drop(runtime);

    for rx in signals {
        // Sent or dropped unsent: either way the task's future is gone.
        let _ = tokio::time::timeout(HANG, rx)
            .await
            .expect("the task was aborted");
    }
    assert!(
        logs.text().contains("dropped without shutdown()"),
        "{}",
        logs.text()
    );
}

#[tokio::test]
async fn a_provider_that_holds_a_scope_is_dropped_with_its_runtime() {
    struct Executor {
        _scope: Scope,
        dropped: Arc<AtomicBool>,
    }
    impl Drop for Executor {
        fn drop(&mut self) {
            // The backstop a real executor has here: kill what it still runs.
            self.dropped.store(true, Ordering::SeqCst);
        }
    }
    for shut_down in [false, true] {
        let runtime = Runtime::new();
        let plugin = runtime.scope().child("plugin:shell").unwrap();
        let dropped = Arc::new(AtomicBool::new(false));
        plugin
            .provide::<Executor>(Arc::new(Executor {
                _scope: plugin.clone(),
                dropped: dropped.clone(),
            }))
            .unwrap();
        if shut_down {
            runtime.shutdown().await;
        }
        drop(plugin);
        drop(runtime);
        assert!(
            dropped.load(Ordering::SeqCst),
            "shut down first: {shut_down}"
        );
    }
}

#[tokio::test]
async fn a_runtime_dropped_after_shutdown_logs_nothing() {
    let (logs, _guard) = capture_logs();
    let runtime = Runtime::new();
    runtime.scope().child("a").unwrap();
    runtime.shutdown().await;
    drop(runtime);
    assert!(!logs.text().contains("without shutdown"), "{}", logs.text());
}

#[tokio::test]
async fn a_task_aborted_before_its_first_poll_withdraws_its_effect() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("tasks").unwrap();
    for _ in 0..5 {
        let handle = scope.spawn(async {}).unwrap();
        handle.abort(); // on this current-thread runtime the task has not run yet
        assert_eq!(handle.join().await, Err(TaskError::Cancelled));
    }
    assert_eq!(scope.effect_count(), 0);
    scope.dispose().await;
}
