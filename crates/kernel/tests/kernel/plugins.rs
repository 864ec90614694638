//! Plugins: load, unload, reload, failed applies, shutdown order, bad names.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, KernelError, Plugin, Runtime, Scope};
use tokio::sync::oneshot;

use crate::support::Log;

/// A plugin that records its apply and its disposal.
struct Recorder {
    name: &'static str,
    log: Log,
}

#[async_trait]
impl Plugin for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        self.log.push(format!("apply {}", self.name));
        let log = self.log.clone();
        let name = self.name;
        scope.add_disposer(move || {
            log.push(format!("dispose {name}"));
            async {}
        })?;
        Ok(())
    }
}

fn recorder(name: &'static str, log: &Log) -> Recorder {
    Recorder {
        name,
        log: log.clone(),
    }
}

/// A plugin that registers one of every effect and then fails or panics.
struct Broken {
    panic: bool,
    effects: Arc<Log>,
    task_dropped: std::sync::Mutex<Option<oneshot::Sender<()>>>,
}

struct Marker;

#[async_trait]
impl Plugin for Broken {
    fn name(&self) -> &str {
        "broken"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.provide::<Marker>(Arc::new(Marker))?;
        let heard = self.effects.clone();
        scope.on(move |_: &u8| heard.push("listener heard"))?;
        let disposed = self.effects.clone();
        scope.add_disposer(move || {
            disposed.push("disposer ran");
            async {}
        })?;
        // Captured by the future, so dropping the future (polled or not) sends the signal.
        let signal = DropSend(self.task_dropped.lock().unwrap().take());
        scope.spawn(async move {
            let _signal = signal;
            std::future::pending::<()>().await;
        })?;
        scope.child("inner")?;
        if self.panic {
            panic!("apply exploded");
        }
        Err("configuration is invalid".into())
    }
}

/// Signals when dropped: proves the task's future is gone.
struct DropSend(Option<oneshot::Sender<()>>);

impl Drop for DropSend {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

#[tokio::test]
async fn load_applies_and_unload_disposes() {
    let runtime = Runtime::new();
    let log = Log::default();
    runtime.load(recorder("a", &log)).await.unwrap();
    assert_eq!(runtime.plugins(), ["a"]);
    runtime.unload("a").await.unwrap();
    assert!(runtime.plugins().is_empty());
    assert_eq!(log.take(), ["apply a", "dispose a"]);
}

#[tokio::test]
async fn a_failed_or_panicking_apply_leaves_nothing_behind() {
    for panic in [false, true] {
        let runtime = Runtime::new();
        let effects = Arc::new(Log::default());
        let (tx, mut task_dropped) = oneshot::channel();
        let plugin = Broken {
            panic,
            effects: effects.clone(),
            task_dropped: std::sync::Mutex::new(Some(tx)),
        };
        let err = runtime.load(plugin).await.unwrap_err();
        match (&err, panic) {
            (KernelError::PluginApply { name, source }, false) => {
                assert_eq!(name, "broken");
                assert_eq!(source.to_string(), "configuration is invalid");
            }
            (KernelError::PluginPanicked { name, message }, true) => {
                assert_eq!(name, "broken");
                assert_eq!(message, "apply exploded");
            }
            (other, _) => panic!("unexpected {other}"),
        }
        assert!(err.to_string().contains("nothing of it stays registered"));

        assert!(
            runtime.scope().get::<Marker>().is_none(),
            "service withdrawn"
        );
        runtime.scope().emit(1u8);
        assert_eq!(
            effects.take(),
            ["disposer ran"],
            "listener gone, disposer ran"
        );
        assert!(
            task_dropped.try_recv().is_ok(),
            "task cancelled and dropped"
        );
        assert!(runtime.plugins().is_empty());
        assert_eq!(runtime.scope().effect_count(), 0);

        // The name is free again.
        runtime
            .load(recorder("broken", &Log::default()))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn duplicate_unknown_and_invalid_names_are_refused() {
    let runtime = Runtime::new();
    let log = Log::default();
    runtime.load(recorder("a", &log)).await.unwrap();
    assert!(matches!(
        runtime.load(recorder("a", &log)).await,
        Err(KernelError::DuplicatePlugin { name }) if name == "a"
    ));
    assert!(matches!(
        runtime.unload("nope").await,
        Err(KernelError::UnknownPlugin { name }) if name == "nope"
    ));
    assert!(matches!(
        runtime.reload(recorder("nope", &log)).await,
        Err(KernelError::UnknownPlugin { .. })
    ));
    for bad in ["", "a/b"] {
        assert!(matches!(
            runtime.load(recorder(bad, &log)).await,
            Err(KernelError::InvalidPluginName { name }) if name == bad
        ));
    }
    assert_eq!(log.take(), ["apply a"], "no refused plugin was applied");
    assert_eq!(runtime.plugins(), ["a"]);
}

#[tokio::test]
async fn reload_disposes_the_old_instance_before_applying_the_new() {
    let runtime = Runtime::new();
    let log = Log::default();
    runtime.load(recorder("a", &log)).await.unwrap();
    runtime.reload(recorder("a", &log)).await.unwrap();
    assert_eq!(log.take(), ["apply a", "dispose a", "apply a"]);
    assert_eq!(runtime.plugins(), ["a"]);
}

#[tokio::test]
async fn a_reload_whose_apply_fails_leaves_the_plugin_unloaded() {
    let runtime = Runtime::new();
    let log = Log::default();
    struct Named(Broken);
    #[async_trait]
    impl Plugin for Named {
        fn name(&self) -> &str {
            "a"
        }
        async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
            self.0.apply(scope).await
        }
    }
    runtime.load(recorder("a", &log)).await.unwrap();
    let broken = Named(Broken {
        panic: false,
        effects: Arc::new(Log::default()),
        task_dropped: std::sync::Mutex::new(None),
    });
    let err = runtime.reload(broken).await.unwrap_err();
    assert!(matches!(err, KernelError::PluginApply { .. }));
    assert!(runtime.plugins().is_empty());
    assert!(runtime.scope().get::<Marker>().is_none());
    assert_eq!(log.take(), ["apply a", "dispose a"]);
}

#[tokio::test]
async fn shutdown_disposes_plugins_in_reverse_load_order() {
    let runtime = Runtime::new();
    let log = Log::default();
    for name in ["provider", "middle", "consumer"] {
        runtime.load(recorder(name, &log)).await.unwrap();
    }
    // A reload keeps the plugin's place in the load order.
    runtime.reload(recorder("provider", &log)).await.unwrap();
    let root_log = log.clone();
    runtime
        .scope()
        .add_disposer(move || {
            root_log.push("dispose root");
            async {}
        })
        .unwrap();
    log.take();

    runtime.shutdown().await;

    assert_eq!(
        log.take(),
        [
            "dispose consumer",
            "dispose middle",
            "dispose provider",
            "dispose root"
        ]
    );
    assert!(runtime.plugins().is_empty());
    assert!(matches!(
        runtime.load(recorder("late", &log)).await,
        Err(KernelError::ShuttingDown { .. })
    ));
    runtime.shutdown().await; // idempotent
    assert!(log.take().is_empty());
}

#[tokio::test]
async fn an_operation_on_a_busy_plugin_is_refused() {
    struct Slow {
        entered: std::sync::Mutex<Option<oneshot::Sender<()>>>,
        gate: tokio::sync::Mutex<Option<oneshot::Receiver<()>>>,
    }
    #[async_trait]
    impl Plugin for Slow {
        fn name(&self) -> &str {
            "slow"
        }
        async fn apply(&self, _scope: &Scope) -> Result<(), BoxError> {
            if let Some(tx) = self.entered.lock().unwrap().take() {
                let _ = tx.send(());
            }
            if let Some(gate) = self.gate.lock().await.take() {
                let _ = gate.await;
            }
            Ok(())
        }
    }
    let runtime = Arc::new(Runtime::new());
    let (entered_tx, entered) = oneshot::channel();
    let (release, gate) = oneshot::channel();
    let plugin = Slow {
        entered: std::sync::Mutex::new(Some(entered_tx)),
        gate: tokio::sync::Mutex::new(Some(gate)),
    };
    let loading = {
        let runtime = runtime.clone();
        tokio::spawn(async move { runtime.load(plugin).await })
    };
    entered.await.unwrap();
    assert!(matches!(
        runtime.unload("slow").await,
        Err(KernelError::PluginBusy { .. })
    ));
    release.send(()).unwrap();
    loading.await.unwrap().unwrap();
    runtime.unload("slow").await.unwrap();
}

#[tokio::test]
async fn a_plugin_may_load_another_plugin_from_apply() {
    struct Parent {
        runtime: std::sync::Weak<Runtime>,
        log: Log,
    }
    #[async_trait]
    impl Plugin for Parent {
        fn name(&self) -> &str {
            "parent"
        }
        async fn apply(&self, _scope: &Scope) -> Result<(), BoxError> {
            let runtime = self.runtime.upgrade().ok_or("runtime gone")?;
            runtime.load(recorder("nested", &self.log)).await?;
            Ok(())
        }
    }
    let log = Log::default();
    let runtime = Arc::new(Runtime::new());
    let plugin = Parent {
        runtime: Arc::downgrade(&runtime),
        log: log.clone(),
    };
    runtime.load(plugin).await.unwrap();
    assert_eq!(runtime.plugins(), ["parent", "nested"]);
    assert_eq!(log.take(), ["apply nested"]);
}

/// Loads `inner` from its own `apply`, as a plugin that brings its own helpers does.
struct Outer {
    runtime: std::sync::Weak<Runtime>,
    log: Log,
}

#[async_trait]
impl Plugin for Outer {
    fn name(&self) -> &str {
        "outer"
    }
    async fn apply(&self, _scope: &Scope) -> Result<(), BoxError> {
        let runtime = self.runtime.upgrade().ok_or("runtime gone")?;
        runtime.load(recorder("inner", &self.log)).await?;
        Ok(())
    }
}

#[tokio::test]
async fn a_plugin_loaded_from_another_plugins_apply_is_reloaded_and_unloaded_with_it() {
    let log = Log::default();
    let runtime = Arc::new(Runtime::new());
    let outer = || Outer {
        runtime: Arc::downgrade(&runtime),
        log: log.clone(),
    };
    runtime.load(outer()).await.unwrap();
    assert_eq!(runtime.plugins(), ["outer", "inner"]);
    log.take();

    runtime.reload(outer()).await.unwrap();
    assert_eq!(log.take(), ["dispose inner", "apply inner"]);
    assert_eq!(runtime.plugins(), ["outer", "inner"]);

    runtime.unload("outer").await.unwrap();
    assert_eq!(log.take(), ["dispose inner"]);
    assert!(runtime.plugins().is_empty());
    runtime.shutdown().await;
    assert_eq!(runtime.live_scopes(), 0);
}

#[tokio::test]
async fn a_duplicate_service_inside_apply_stays_a_typed_kernel_error() {
    struct Twice;
    #[async_trait]
    impl Plugin for Twice {
        fn name(&self) -> &str {
            "twice"
        }
        async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
            scope.provide::<u8>(Arc::new(1))?;
            scope.provide::<u8>(Arc::new(2))?;
            Ok(())
        }
    }
    let runtime = Runtime::new();
    let err = runtime.load(Twice).await.unwrap_err();
    assert!(
        matches!(
            err.apply_cause(),
            Some(KernelError::DuplicateService { .. })
        ),
        "{err:?}"
    );
    assert!(runtime.scope().get::<u8>().is_none());
}

#[tokio::test]
async fn an_unload_check_that_says_no_keeps_the_plugin_loaded_until_it_says_yes() {
    struct Busy(Arc<std::sync::atomic::AtomicBool>);
    #[async_trait]
    impl Plugin for Busy {
        fn name(&self) -> &str {
            "busy"
        }
        async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
            scope.provide::<u16>(Arc::new(7))?;
            let busy = self.0.clone();
            scope.add_unload_check(move || {
                if busy.load(std::sync::atomic::Ordering::SeqCst) {
                    Err("2 sessions are still open".into())
                } else {
                    Ok(())
                }
            })?;
            Ok(())
        }
    }
    let busy = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let runtime = Runtime::new();
    runtime.load(Busy(busy.clone())).await.unwrap();

    for refused in [
        runtime.unload("busy").await,
        runtime.reload(Busy(busy.clone())).await,
    ] {
        let err = refused.unwrap_err();
        assert!(matches!(err, KernelError::UnloadRefused { .. }), "{err:?}");
        assert!(
            err.to_string().contains("2 sessions are still open"),
            "{err}"
        );
    }
    assert_eq!(runtime.plugins(), ["busy"]);
    assert_eq!(*runtime.scope().require::<u16>().unwrap(), 7);

    busy.store(false, std::sync::atomic::Ordering::SeqCst);
    runtime.unload("busy").await.unwrap();
    assert!(runtime.plugins().is_empty());
    runtime.shutdown().await;
}
