//! Typed services: provide, get, require, duplicates, withdrawal with the providing scope.

use std::sync::Arc;

use dsh_kernel::{KernelError, Runtime};

trait Clock: Send + Sync {
    fn now(&self) -> u64;
}

struct Fixed(u64);

impl Clock for Fixed {
    fn now(&self) -> u64 {
        self.0
    }
}

#[tokio::test]
async fn a_provided_trait_object_is_found_from_any_scope() {
    let runtime = Runtime::new();
    let provider = runtime.scope().child("provider").unwrap();
    let consumer = runtime.scope().child("consumer").unwrap();
    assert!(consumer.get::<dyn Clock>().is_none());

    provider.provide::<dyn Clock>(Arc::new(Fixed(42))).unwrap();
    assert_eq!(consumer.get::<dyn Clock>().unwrap().now(), 42);
    assert_eq!(consumer.require::<dyn Clock>().unwrap().now(), 42);

    // A concrete type is a service too, distinct from the trait object.
    provider.provide::<Fixed>(Arc::new(Fixed(7))).unwrap();
    assert_eq!(consumer.require::<Fixed>().unwrap().0, 7);
    assert_eq!(consumer.require::<dyn Clock>().unwrap().now(), 42);
}

#[tokio::test]
async fn a_second_provider_is_refused_and_the_first_is_kept() {
    let runtime = Runtime::new();
    let first = runtime.scope().child("first").unwrap();
    let second = runtime.scope().child("second").unwrap();
    first.provide::<dyn Clock>(Arc::new(Fixed(1))).unwrap();

    let err = second.provide::<dyn Clock>(Arc::new(Fixed(2))).unwrap_err();
    match &err {
        KernelError::DuplicateService { service, provider } => {
            assert!(service.contains("Clock"), "{service}");
            assert_eq!(provider, "root/first");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(
        err.to_string()
            .contains("already provided by scope `root/first`")
    );
    assert_eq!(
        second.effect_count(),
        0,
        "nothing registered by the refusal"
    );
    assert_eq!(runtime.scope().require::<dyn Clock>().unwrap().now(), 1);

    // Disposing the refused scope must not withdraw the first provider's service.
    second.dispose().await;
    assert_eq!(runtime.scope().require::<dyn Clock>().unwrap().now(), 1);
}

#[tokio::test]
async fn a_service_disappears_with_its_scope_and_lookups_fail_cleanly() {
    let runtime = Runtime::new();
    let provider = runtime.scope().child("provider").unwrap();
    provider.provide::<dyn Clock>(Arc::new(Fixed(3))).unwrap();
    let held = runtime.scope().require::<dyn Clock>().unwrap();

    provider.dispose().await;

    assert!(runtime.scope().get::<dyn Clock>().is_none());
    let err = runtime.scope().require::<dyn Clock>().err().unwrap();
    assert!(matches!(err, KernelError::MissingService { .. }));
    assert!(err.to_string().contains("Clock"), "{err}");
    // An Arc taken earlier stays usable; only the registration is gone.
    assert_eq!(held.now(), 3);

    // The service type can be provided again by a new provider.
    let next = runtime.scope().child("next").unwrap();
    next.provide::<dyn Clock>(Arc::new(Fixed(4))).unwrap();
    assert_eq!(runtime.scope().require::<dyn Clock>().unwrap().now(), 4);
}

#[tokio::test]
async fn services_are_withdrawn_in_lifo_order_with_the_other_effects() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("s").unwrap();
    let observer = runtime.scope().clone();
    let (tx, rx) = std::sync::mpsc::channel();
    // Registered before the service: runs after it is withdrawn.
    let early = tx.clone();
    let probe = observer.clone();
    scope
        .add_disposer(move || {
            early.send(("early", probe.get::<u64>().is_some())).unwrap();
            async {}
        })
        .unwrap();
    scope.provide::<u64>(Arc::new(9)).unwrap();
    // Registered after the service: runs while it is still provided.
    scope
        .add_disposer(move || {
            tx.send(("late", observer.get::<u64>().is_some())).unwrap();
            async {}
        })
        .unwrap();
    scope.dispose().await;
    let seen: Vec<_> = rx.try_iter().collect();
    assert_eq!(seen, [("late", true), ("early", false)]);
}

#[tokio::test]
async fn a_lookup_through_a_disposing_or_disposed_scope_fails_with_scope_closed() {
    let runtime = Runtime::new();
    runtime
        .scope()
        .provide::<String>(Arc::new("shared".into()))
        .unwrap();
    let scope = runtime.scope().child("agent").unwrap();
    assert!(scope.get::<String>().is_some());
    let (tx, rx) = tokio::sync::oneshot::channel();
    let inside = scope.clone();
    scope
        .add_disposer(move || {
            let seen = (inside.get::<String>().is_none(), inside.require::<String>());
            let _ = tx.send(matches!(seen, (true, Err(KernelError::ScopeClosed { .. }))));
            async {}
        })
        .unwrap();
    scope.dispose().await;
    assert!(rx.await.unwrap(), "refused while disposing");
    assert!(matches!(
        scope.require::<String>(),
        Err(KernelError::ScopeClosed { .. })
    ));
    assert!(
        runtime.scope().get::<String>().is_some(),
        "still served elsewhere"
    );
}

#[tokio::test]
async fn after_a_reload_lookups_reach_only_the_new_instance() {
    struct Instance(u32);
    struct Provider(u32);
    #[async_trait::async_trait]
    impl dsh_kernel::Plugin for Provider {
        fn name(&self) -> &str {
            "provider"
        }
        async fn apply(&self, scope: &dsh_kernel::Scope) -> Result<(), dsh_kernel::BoxError> {
            scope.provide::<Instance>(Arc::new(Instance(self.0)))?;
            Ok(())
        }
    }
    let runtime = Runtime::new();
    runtime.load(Provider(1)).await.unwrap();
    let old = Arc::downgrade(&runtime.scope().require::<Instance>().unwrap());
    runtime.reload(Provider(2)).await.unwrap();
    assert_eq!(runtime.scope().require::<Instance>().unwrap().0, 2);
    assert!(old.upgrade().is_none(), "nothing kept the old instance");
    runtime.shutdown().await;
}
