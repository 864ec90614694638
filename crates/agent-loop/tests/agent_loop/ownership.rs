//! Identity and ownership: each agent's tools see their own caller, a stale handle never
//! reaches its successor, one loop plugin per runtime, owner scopes that let go of an agent,
//! an idle agent that owns no task, and an owner tearing its agents down in order.

use std::sync::Arc;

use dsh_agent::{AgentEvent, CancelCause, CreateAgent};
use dsh_agent_loop::{AgentLoopPlugin, LoopConfig};
use dsh_kernel::KernelError;
use dsh_session::SessionId;

use crate::support::*;

#[tokio::test]
async fn each_agents_tools_see_their_own_caller_id_and_scope() {
    let model = ScriptedModel::new(vec![
        call("a", "echo", "{}"),
        say("x"),
        call("b", "echo", "{}"),
        say("y"),
    ]);
    let h = Harness::new(model).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    let (one, two) = (h.agent().await, h.agent().await);
    one.agent().send(user("1")).unwrap().await;
    two.agent().send(user("2")).unwrap().await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].caller_id(), Some(one.agent().id()));
    assert_eq!(seen[1].caller_id(), Some(two.agent().id()));
    let (s1, s2) = (
        seen[0].caller_scope().unwrap(),
        seen[1].caller_scope().unwrap(),
    );
    assert!(!s1.same_as(&s2));
    one.dispose().await;
    assert!(!s1.is_active(), "the tools scope goes with its agent");
    assert!(s2.is_active());
    two.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_handle_never_touches_its_successor() {
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let id = SessionId::parse("x").unwrap();
    let old = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id.clone())
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    old.dispose().await;
    let successor = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id.clone())
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    old.dispose().await;
    assert!(h.registry().get(&id).is_some());
    assert_eq!(
        successor.agent().send(user("a")).unwrap().await,
        completed(1)
    );
    assert_eq!(h.count("agent/disposed"), 1);
    successor.dispose().await;
}

#[tokio::test]
async fn a_second_loop_plugin_is_refused_and_the_first_keeps_working() {
    struct Named(AgentLoopPlugin);
    #[async_trait::async_trait]
    impl dsh_kernel::Plugin for Named {
        fn name(&self) -> &str {
            "agent-loop-2"
        }
        async fn apply(&self, scope: &dsh_kernel::Scope) -> Result<(), dsh_kernel::BoxError> {
            self.0.apply(scope).await
        }
    }
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let err = h
        .runtime
        .load(Named(AgentLoopPlugin::new(LoopConfig::default())))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.apply_cause(),
            Some(KernelError::DuplicateService { .. })
        ),
        "{err:?}"
    );
    let handle = h.agent().await;
    assert_eq!(handle.agent().send(user("a")).unwrap().await, completed(1));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_its_handle_disposed_an_owner_scope_no_longer_holds_the_agent() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let owner = h.runtime.scope().child("owner").unwrap();
    let handle = h
        .registry()
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let weak = Arc::downgrade(handle.agent());
    handle.dispose().await;
    drop(handle);
    assert_eq!(owner.owned_count(), 0);
    assert!(weak.upgrade().is_none(), "nothing keeps the agent alive");
    owner.dispose().await;
    assert_eq!(h.count("agent/disposed"), 1);
}

#[tokio::test]
async fn an_idle_agent_owns_no_task() {
    let h = Harness::new(ScriptedModel::new(vec![
        call("c", "echo", "{}"),
        say("a"),
        say("b"),
    ]))
    .await;
    h.add_tool(Probe::new("echo"));
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    agent.send(user("1")).unwrap().await;
    agent.send(user("2")).unwrap().await;
    agent.when_idle().await;
    let agents: Vec<String> = h
        .runtime
        .live_scope_paths()
        .into_iter()
        .filter(|p| p.contains("~agent"))
        .collect();
    assert_eq!(
        agents.len(),
        2,
        "the agent scope and its tools scope: {agents:?}"
    );
    // No task lingers on the agent's scope once it is idle: disposing it aborts nothing.
    let (logs, _guard) = dsh_test_support::logs::capture();
    handle.dispose().await;
    assert!(!logs.text().contains("did not end"), "{}", logs.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposing_an_owner_of_a_busy_and_an_idle_agent_tears_both_down_in_order() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Text("half"),
        Act::Gate(gate.clone()),
        Act::Hang,
    ]]);
    let h = Harness::persistent(model).await;
    let owner = h.runtime.scope().child("connection").unwrap();
    let busy = h
        .registry()
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let idle = h
        .registry()
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let ticket = busy.agent().send(user("A")).unwrap();
    gate.entered().await;
    gate.release();
    owner.dispose().await;
    assert_eq!(ticket.await, aborted(1, CancelCause::Disposed));
    assert!(busy.is_disposed() && idle.is_disposed());
    assert!(h.registry().list().is_empty() && h.store.list_live().is_empty());
    let events: Vec<AgentEvent> = h.events.lock().unwrap().clone();
    let cancel_at = events
        .iter()
        .position(|e| {
            matches!(
                e,
                AgentEvent::CancelRequested {
                    cause: CancelCause::Disposed,
                    ..
                }
            )
        })
        .unwrap();
    let disposed_at = events
        .iter()
        .position(|e| matches!(e, AgentEvent::Disposed { id } if id == busy.agent().id()))
        .unwrap();
    assert!(cancel_at < disposed_at);
}
