//! Scopes outside the tree and their owners: detached scopes, owner links, memoised
//! teardowns, shutdown of what lives outside the tree, live-scope accounting and the cost of
//! tearing many things down at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dsh_kernel::{KernelError, Runtime, ScopePhase, Teardown};
use tokio::sync::oneshot;

use crate::support::{Log, disposer};

const HANG: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_detached_scope_outlives_the_scope_that_created_it_and_shares_its_services() {
    let runtime = Runtime::new();
    let plugin = runtime.scope().child("plugin:loop").unwrap();
    plugin.provide::<String>(Arc::new("model".into())).unwrap();
    let agent = plugin.detached("agent-1").unwrap();
    assert!(agent.is_detached());
    assert_eq!(agent.path(), "root/plugin:loop/~agent-1");
    assert_eq!(agent.require::<String>().unwrap().as_str(), "model");

    plugin.dispose().await;

    assert!(agent.is_active(), "no parent disposed it");
    assert!(
        agent.get::<String>().is_none(),
        "the service left with its provider"
    );
    agent.dispose().await;
    assert_eq!(agent.phase(), ScopePhase::Disposed);
}

#[tokio::test]
async fn an_owner_disposes_what_it_owns_before_its_own_effects() {
    let runtime = Runtime::new();
    let log = Log::default();
    let owner = runtime.scope().child("owner").unwrap();
    owner.add_disposer(disposer(&log, "owner effect")).unwrap();
    let owned = runtime.scope().detached("owned").unwrap();
    owned.add_disposer(disposer(&log, "owned effect")).unwrap();
    owner.own(&owned).unwrap();
    assert_eq!(owner.owned_count(), 1);

    owner.dispose().await;

    assert_eq!(log.take(), ["owned effect", "owner effect"]);
    assert_eq!(owned.phase(), ScopePhase::Disposed);
}

#[tokio::test]
async fn every_owner_runs_the_one_teardown_and_links_are_withdrawn_when_it_ends() {
    let runtime = Runtime::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = runtime.scope().detached("agent").unwrap();
    let counter = runs.clone();
    let teardown = Teardown::for_scope(&agent, move |_scope| async move {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let owners: Vec<_> = (0..3)
        .map(|i| {
            let owner = runtime.scope().child(&format!("owner-{i}")).unwrap();
            owner.own(&teardown).unwrap();
            owner
        })
        .collect();

    owners[1].dispose().await;

    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(teardown.is_done());
    assert_eq!(
        agent.phase(),
        ScopePhase::Disposed,
        "the teardown ends with its scope"
    );
    assert_eq!(
        owners[0].owned_count(),
        0,
        "the other owners no longer hold it"
    );
    assert_eq!(owners[2].owned_count(), 0);
    for owner in &owners {
        owner.dispose().await;
    }
    teardown.run().await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_link_is_withdrawn_when_the_owned_scope_is_disposed_first() {
    let runtime = Runtime::new();
    let owner = runtime.scope().child("owner").unwrap();
    let owned = runtime.scope().detached("owned").unwrap();
    owner.own(&owned).unwrap();
    owned.dispose().await;
    assert_eq!(owner.owned_count(), 0);
    // Owning something already finished is a no-op.
    owner.own(&owned).unwrap();
    assert_eq!(owner.owned_count(), 0);
}

#[tokio::test]
async fn a_disposing_scope_refuses_links_disposers_and_children_atomically() {
    let runtime = Runtime::new();
    let owner = runtime.scope().child("owner").unwrap();
    let outsider = runtime.scope().detached("outsider").unwrap();
    let (tx, rx) = oneshot::channel();
    let inside = owner.clone();
    let target = outsider.clone();
    owner
        .add_disposer(move || {
            let outcomes = [
                inside.own(&target).map(drop),
                inside.add_disposer(|| async {}).map(drop),
                inside.child("late").map(drop),
                inside.detached("late").map(drop),
            ];
            let refused = outcomes
                .iter()
                .all(|o| matches!(o, Err(KernelError::ScopeClosed { .. })));
            tx.send((refused, inside.owned_count(), inside.effect_count()))
                .unwrap();
            async {}
        })
        .unwrap();

    owner.dispose().await;

    assert_eq!(rx.await.unwrap(), (true, 0, 0));
    assert!(outsider.is_active(), "the refused link did not dispose it");
    outsider.dispose().await;
}

#[tokio::test]
async fn a_scope_cannot_own_itself_and_a_teardown_needs_a_detached_scope() {
    let runtime = Runtime::new();
    let scope = runtime.scope().child("s").unwrap();
    assert!(matches!(
        scope.own(&scope),
        Err(KernelError::OwnsItself { .. })
    ));
    assert!(matches!(
        Teardown::for_scope(&scope, |_| async {}),
        Err(KernelError::NotDetached { .. })
    ));
    let detached = scope.detached("d").unwrap();
    Teardown::for_scope(&detached, |_| async {}).unwrap();
    assert!(matches!(
        Teardown::for_scope(&detached, |_| async {}),
        Err(KernelError::TeardownBound { .. })
    ));
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_teardown_awaited_from_inside_its_own_steps_returns_at_once() {
    let runtime = Runtime::new();
    let agent = runtime.scope().detached("agent").unwrap();
    let me: Arc<OnceLock<Teardown>> = Arc::default();
    let log = Log::default();
    let (inner_me, inner_log) = (me.clone(), log.clone());
    agent
        .add_disposer(move || async move {
            // A step-six disposer asking for the teardown it is part of.
            if let Some(teardown) = inner_me.get() {
                teardown.run().await;
            }
            inner_log.push("disposer returned");
        })
        .unwrap();
    let steps_me = me.clone();
    let steps_log = log.clone();
    let teardown = Teardown::for_scope(&agent, move |_| async move {
        if let Some(teardown) = steps_me.get() {
            teardown.run().await;
        }
        steps_log.push("steps returned");
    })
    .unwrap();
    me.set(teardown.clone()).unwrap();

    tokio::time::timeout(HANG, teardown.run())
        .await
        .expect("no deadlock");

    assert_eq!(log.take(), ["steps returned", "disposer returned"]);
}

#[tokio::test]
async fn a_task_of_the_torn_down_scope_that_asks_for_the_teardown_does_not_wait_for_itself() {
    let runtime = Runtime::new();
    let agent = runtime.scope().detached("agent").unwrap();
    let teardown = Teardown::for_scope(&agent, |_| async {}).unwrap();
    let (tx, rx) = oneshot::channel();
    let asked = teardown.clone();
    agent
        .spawn(async move {
            asked.run().await;
            let _ = tx.send("returned");
            std::future::pending::<()>().await;
        })
        .unwrap();

    assert_eq!(
        tokio::time::timeout(HANG, rx).await.unwrap(),
        Ok("returned")
    );
    tokio::time::timeout(HANG, teardown.run()).await.unwrap();
    assert_eq!(agent.phase(), ScopePhase::Disposed);
}

#[tokio::test]
async fn a_dropped_teardown_caller_does_not_interrupt_it() {
    let runtime = Runtime::new();
    let agent = runtime.scope().detached("agent").unwrap();
    let (gate_tx, gate) = oneshot::channel::<()>();
    let (done_tx, done) = oneshot::channel();
    let teardown = Teardown::for_scope(&agent, move |_| async move {
        let _ = gate.await;
        let _ = done_tx.send(());
    })
    .unwrap();
    {
        let caller = teardown.run();
        futures::pin_mut!(caller);
        assert!(futures::poll!(caller).is_pending());
    }
    assert!(teardown.is_started());
    gate_tx.send(()).unwrap();
    done.await.unwrap();
    teardown.run().await;
    assert_eq!(agent.phase(), ScopePhase::Disposed);
}

#[tokio::test]
async fn shutdown_runs_the_teardowns_of_detached_scopes_after_plugins_and_before_the_root() {
    let runtime = Runtime::new();
    let log = Log::default();
    runtime
        .scope()
        .add_disposer(disposer(&log, "root"))
        .unwrap();
    let agent = runtime.scope().detached("agent").unwrap();
    agent.add_disposer(disposer(&log, "agent scope")).unwrap();
    let steps = log.clone();
    Teardown::for_scope(&agent, move |_| async move {
        steps.push("agent steps");
    })
    .unwrap();
    let loose = runtime.scope().detached("loose").unwrap();
    loose.add_disposer(disposer(&log, "loose scope")).unwrap();
    drop(loose); // the runtime holds a detached scope until it is disposed
    assert_eq!(runtime.live_scopes(), 3);

    runtime.shutdown().await;

    let order = log.take();
    assert_eq!(order.last().map(String::as_str), Some("root"));
    let at = |what: &str| order.iter().position(|e| e == what).unwrap();
    assert!(at("agent steps") < at("agent scope"), "{order:?}");
    assert!(order.contains(&"loose scope".to_owned()), "{order:?}");
    assert_eq!(runtime.live_scopes(), 0);
    assert!(runtime.live_scope_paths().is_empty());
    assert!(matches!(
        runtime.scope().detached("late"),
        Err(KernelError::ScopeClosed { .. })
    ));
}

#[tokio::test]
async fn live_scopes_counts_every_scope_not_yet_disposed() {
    let runtime = Runtime::new();
    assert_eq!(runtime.live_scopes(), 1, "the root");
    let a = runtime.scope().child("a").unwrap();
    let _b = a.child("b").unwrap();
    let d = a.detached("d").unwrap();
    assert_eq!(runtime.live_scopes(), 4);
    assert_eq!(
        runtime.live_scope_paths(),
        ["root", "root/a", "root/a/b", "root/a/~d"]
    );
    a.dispose().await;
    assert_eq!(runtime.live_scope_paths(), ["root", "root/a/~d"]);
    d.dispose().await;
    runtime.shutdown().await;
    assert_eq!(runtime.live_scopes(), 0);
}

#[tokio::test(start_paused = true)]
async fn sibling_children_are_disposed_concurrently() {
    let runtime = Runtime::new();
    let parent = runtime.scope().child("agents").unwrap();
    for i in 0..1000 {
        let child = parent.child(&format!("agent-{i}")).unwrap();
        child
            .add_disposer(|| tokio::time::sleep(Duration::from_millis(10)))
            .unwrap();
    }
    let begun = tokio::time::Instant::now();
    parent.dispose().await;
    let took = begun.elapsed();
    assert!(
        took < Duration::from_millis(100),
        "took {took:?} of virtual time"
    );
}

#[tokio::test(start_paused = true)]
async fn an_owner_awaits_all_its_owned_teardowns_concurrently() {
    let runtime = Runtime::new();
    let owner = runtime.scope().child("owner").unwrap();
    let mut teardowns = Vec::new();
    for i in 0..1000 {
        let agent = runtime.scope().detached(&format!("agent-{i}")).unwrap();
        let teardown = Teardown::for_scope(&agent, |_| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
        })
        .unwrap();
        owner.own(&teardown).unwrap();
        teardowns.push(teardown);
    }
    let begun = tokio::time::Instant::now();
    owner.dispose().await;
    let took = begun.elapsed();
    assert!(
        took < Duration::from_millis(100),
        "took {took:?} of virtual time"
    );
    assert!(teardowns.iter().all(Teardown::is_done));
    assert_eq!(runtime.live_scopes(), 1, "only the root is left");
}
