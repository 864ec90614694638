//! Races and reentrancy: the seeds' cancel-before-start bullet against the real replay model,
//! retiring ids, racing creations, dropped futures, verbs from listeners and observers.

use std::sync::Arc;

use dsh_agent::{
    Agent, AgentError, AgentEvent, AgentStatus, CancelCause, CreateAgent, ResumeAgent,
    TurnEndReason, TurnOutcome,
};
use dsh_kernel::Runtime;
use dsh_llm::{FinishReason, Model};
use dsh_session::{Interest, Session, SessionEvent, SessionObserver, SessionStore};
use dsh_test_providers::providers::{ReplayModel, ReplayScript};

use crate::support::*;

const ONE_REPLY: &str = r#"{"version": 1, "name": "one", "entries": [
  {"stream": [{"text": "only reply"}], "finish": "stop"}
]}"#;

#[tokio::test]
async fn a_cancel_before_a_queued_prompt_starts_keeps_it_from_the_replay_model() {
    let replay = Arc::new(
        ReplayModel::new(ReplayScript::from_json_str(ONE_REPLY, "one.json").unwrap())
            .with_recorded_requests(),
    );
    let runtime = Runtime::new();
    let store = SessionStore::new();
    runtime
        .scope()
        .provide::<SessionStore>(store.clone())
        .unwrap();
    runtime
        .scope()
        .provide::<dyn Model>(replay.clone())
        .unwrap();
    runtime.load(dsh_tools::ToolRegistryPlugin).await.unwrap();
    runtime
        .load(dsh_agent_loop::AgentLoopPlugin::new(Default::default()))
        .await
        .unwrap();
    let registry = runtime
        .scope()
        .require::<dyn dsh_agent::AgentRegistry>()
        .unwrap();
    let handle = registry
        .create(CreateAgent::new(runtime.scope().clone()).with_cwd("/w"))
        .await
        .unwrap();
    let agent = handle.agent().clone();

    let first = agent.send(user("first")).unwrap();
    assert!(agent.cancel(CancelCause::User));
    assert!(matches!(
        first.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Aborted { .. }
        }
    ));
    assert_eq!(
        replay.calls(),
        0,
        "the cancelled prompt never reached the model"
    );

    let next = agent.send(user("next")).unwrap();
    assert!(matches!(
        next.await,
        TurnOutcome::Ended {
            turn: 2,
            reason: TurnEndReason::Completed
        }
    ));
    assert_eq!(replay.calls(), 1);
    let request = &replay.requests()[0];
    assert_eq!(
        request.messages,
        [dsh_llm::Message::User {
            content: format!("first\n\n{}\n\nnext", dsh_agent_loop::CANCELLED_NOTE)
        }],
        "the cancelled prompt stays, marked, and the next one is its own turn"
    );
    runtime.shutdown().await;
    assert!(store.list_live().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_retiring_id_waits_for_its_teardown_then_succeeds() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![Act::Gate(gate.clone()), Act::Hang]]);
    let h = Harness::persistent(model).await;
    let registry = h.registry();
    let old = registry
        .create(CreateAgent::new(h.owner()).with_id(id("x")).with_cwd("/w"))
        .await
        .unwrap();
    let _ticket = old.agent().send(user("A")).unwrap();
    gate.entered().await;
    old.teardown().start();
    let resumed = registry
        .resume(ResumeAgent::new(h.owner(), id("x")))
        .await
        .unwrap();
    assert!(old.is_disposed(), "the resume waited for the old teardown");
    let ends: Vec<_> = resumed
        .agent()
        .session()
        .events()
        .iter()
        .filter(|e| e.kind.as_str() == "turn/end")
        .map(|e| data(e)["reason"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ends,
        ["aborted"],
        "the aborted turn is in the resumed history"
    );
    assert_eq!(registry.list().len(), 1);
    resumed.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_many_racing_creations_of_one_id_exactly_one_publishes() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let registry = h.registry();
    let tries: Vec<_> = (0..32)
        .map(|_| {
            let registry = registry.clone();
            let owner = h.owner();
            tokio::spawn(async move {
                registry
                    .create(CreateAgent::new(owner).with_id(id("x")).with_cwd("/w"))
                    .await
            })
        })
        .collect();
    let mut won = Vec::new();
    for t in tries {
        match t.await.unwrap() {
            Ok(handle) => won.push(handle),
            Err(AgentError::AlreadyLive { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
    }
    assert_eq!(won.len(), 1);
    assert_eq!(h.store.list_live().len(), 1);
    assert_eq!(registry.list().len(), 1);
    assert_eq!(h.count("agent/created"), 1);
    // The losers left no scope behind: the root, the plugins, the winner's scope and its
    // tools scope are all that live.
    let agents = h
        .runtime
        .live_scope_paths()
        .into_iter()
        .filter(|p| p.contains("~agent"))
        .count();
    assert_eq!(agents, 2, "{:?}", h.runtime.live_scope_paths());
    won[0].dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_creation_leaves_nothing_behind() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let registry = h.registry();
    {
        let creating = registry.create(CreateAgent::new(h.owner()).with_id(id("x")).with_cwd("/w"));
        futures::pin_mut!(creating);
        // On a fast machine the creation may finish within this one poll: then the caller
        // holds a handle, and what it received is its to dispose.
        if let std::task::Poll::Ready(Ok(handle)) = futures::poll!(creating) {
            handle.dispose().await;
        }
    }
    // Whatever the dropped call had published is torn down; the id becomes free again.
    let again = registry
        .create(CreateAgent::new(h.owner()).with_id(id("x")).with_cwd("/w"))
        .await
        .unwrap();
    assert_eq!(h.count("agent/created") - h.count("agent/disposed"), 1);
    again.dispose().await;
    assert!(h.store.list_live().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_listener_may_send_and_the_message_runs_in_the_same_interval() {
    let model = ScriptedModel::new(vec![say("one"), say("two")]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent: Arc<dyn Agent> = handle.agent().clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let weak = Arc::downgrade(&agent);
    h.runtime
        .scope()
        .on(move |e: &AgentEvent| {
            if let AgentEvent::Status {
                status: AgentStatus::Running,
                ..
            } = e
                && let Some(tx) = tx.lock().unwrap().take()
                && let Some(agent) = weak.upgrade()
            {
                let _ = tx.send(agent.send(user("B")).unwrap());
            }
        })
        .unwrap();
    let a = agent.send(user("A")).unwrap();
    let b = rx.await.unwrap();
    assert!(matches!(a.await, TurnOutcome::Ended { turn: 1, .. }));
    assert!(matches!(b.await, TurnOutcome::Ended { turn: 2, .. }));
    agent.when_idle().await;
    let statuses: Vec<_> = h
        .event_names()
        .into_iter()
        .filter(|e| e.starts_with("status"))
        .collect();
    assert_eq!(statuses, ["status:Running", "status:Idle"]);
    handle.dispose().await;
}

/// Steers the agent from inside an `on_append` observer when it sees `trigger`.
struct SteerOn {
    trigger: &'static str,
    agent: std::sync::Mutex<Option<Arc<dyn Agent>>>,
    tickets: std::sync::Mutex<Vec<dsh_agent::TurnTicket>>,
}

impl SessionObserver for SteerOn {
    fn name(&self) -> &str {
        "steer-on"
    }
    fn on_append(&self, _session: &Session, event: &Arc<SessionEvent>) {
        if event.kind.as_str() == self.trigger
            && let Some(agent) = self.agent.lock().unwrap().take()
        {
            self.tickets
                .lock()
                .unwrap()
                .push(agent.steer(user("S")).unwrap());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_from_an_append_observer_enters_the_next_step_without_deadlock() {
    let model = ScriptedModel::new(vec![say("first"), say("second")]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent: Arc<dyn Agent> = handle.agent().clone();
    let observer = Arc::new(SteerOn {
        trigger: "assistant/message",
        agent: std::sync::Mutex::new(Some(agent.clone())),
        tickets: Default::default(),
    });
    h.store
        .subscribe(
            h.runtime.scope(),
            Interest::Session(agent.id().clone()),
            observer.clone(),
        )
        .unwrap();
    let a = agent.send(user("A")).unwrap();
    assert!(matches!(
        a.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Completed
        }
    ));
    let s = observer.tickets.lock().unwrap().pop().unwrap();
    assert!(
        matches!(s.await, TurnOutcome::Ended { turn: 1, .. }),
        "S joined turn 1"
    );
    assert_eq!(h.model.calls(), 2, "turn 1 took a second step for S");
    validate_log(&agent.session().events());
    handle.dispose().await;
}

/// Records the log length at every barrier, and fails barriers on demand.
#[derive(Default)]
struct Barriers {
    at: std::sync::Mutex<Vec<u64>>,
    fail: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl SessionObserver for Barriers {
    fn name(&self) -> &str {
        "barriers"
    }
    async fn on_flush(&self, session: &Session) -> Result<(), dsh_kernel::BoxError> {
        self.at.lock().unwrap().push(session.next_seq());
        if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
            return Err("the disk is gone".into());
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_loop_flushes_before_each_request_before_each_body_and_after_turn_end() {
    let model = ScriptedModel::new(vec![call("c1", "echo", "{}"), say("done")]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let barriers = Arc::new(Barriers::default());
    h.store
        .subscribe(h.runtime.scope(), Interest::All, barriers.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    agent.send(user("go")).unwrap().await;
    let events = agent.session().events();
    let seq_of = |kind: &str, nth: usize| {
        events
            .iter()
            .filter(|e| e.kind.as_str() == kind)
            .nth(nth)
            .map(|e| e.seq + 1)
            .unwrap()
    };
    let at = barriers.at.lock().unwrap().clone();
    assert_eq!(
        at,
        [
            seq_of("session/title", 0),
            seq_of("tool/call", 0),
            seq_of("step/start", 1),
            events.len() as u64
        ],
        "before request 1, before the body, before request 2, after turn/end"
    );
    handle.dispose().await;
}

#[tokio::test]
async fn a_failed_pre_request_barrier_sends_no_request_and_ends_the_turn_error() {
    let model = ScriptedModel::new(vec![say("later")]);
    let h = Harness::new(model.clone()).await;
    let barriers = Arc::new(Barriers::default());
    barriers
        .fail
        .store(true, std::sync::atomic::Ordering::SeqCst);
    h.store
        .subscribe(h.runtime.scope(), Interest::All, barriers.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    match agent.send(user("a")).unwrap().await {
        TurnOutcome::Ended {
            reason: TurnEndReason::Error { failure },
            ..
        } => assert_eq!(failure.code, "persistence"),
        other => panic!("{other:?}"),
    }
    assert_eq!(h.model.calls(), 0);
    barriers
        .fail
        .store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(matches!(
        agent.send(user("b")).unwrap().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Completed,
            ..
        }
    ));
    handle.dispose().await;
}

#[tokio::test]
async fn max_steps_ends_a_turn_that_keeps_calling_tools() {
    let model = ScriptedModel::new(vec![
        call("c1", "echo", "{}"),
        call("c2", "echo", "{}"),
        call("c3", "echo", "{}"),
        call("c4", "echo", "{}"),
    ]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let handle = h.agent_with(max_steps(3)).await;
    let agent = handle.agent().clone();
    assert!(matches!(
        agent.send(user("loop")).unwrap().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::MaxSteps,
            ..
        }
    ));
    assert_eq!(h.model.calls(), 3);
    validate_log(&agent.session().events());
    let _ = FinishReason::Stop;
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_racing_the_end_of_a_step_lands_in_exactly_one_step() {
    for _ in 0..300 {
        let gate = Gate::default();
        let model = ScriptedModel::new(vec![
            vec![
                Act::Gate(gate.clone()),
                Act::Text("one"),
                Act::Finish(FinishReason::Stop),
            ],
            say("two"),
        ]);
        let h = Harness::new(model).await;
        let handle = h.agent().await;
        let agent = handle.agent().clone();
        let a = agent.send(user("A")).unwrap();
        gate.entered().await;
        let steering = {
            let agent = agent.clone();
            std::thread::spawn(move || agent.steer(user("S")).unwrap())
        };
        gate.release();
        let s = tokio::task::spawn_blocking(move || steering.join().unwrap())
            .await
            .unwrap();
        let (a, s) = (a.await, s.await);
        assert!(matches!(a, TurnOutcome::Ended { turn: 1, .. }));
        assert!(
            matches!(
                s,
                TurnOutcome::Ended {
                    turn: 1 | 2,
                    reason: TurnEndReason::Completed
                }
            ),
            "{s:?}"
        );
        let count = agent
            .session()
            .events()
            .iter()
            .filter(|e| data(e)["message"]["text"] == "S")
            .count();
        assert_eq!(count, 1, "S was claimed exactly once");
        handle.dispose().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_racing_the_next_claim_never_lets_the_queued_prompt_complete() {
    for _ in 0..300 {
        let gate = Gate::default();
        let model = ScriptedModel::new(vec![say("one"), vec![Act::Gate(gate.clone()), Act::Hang]]);
        let h = Harness::new(model).await;
        let handle = h.agent().await;
        let agent = handle.agent().clone();
        let a = agent.send(user("A")).unwrap();
        let b = agent.send(user("B")).unwrap();
        let cancelling = {
            let agent = agent.clone();
            std::thread::spawn(move || agent.cancel(CancelCause::User))
        };
        tokio::task::spawn_blocking(move || cancelling.join().unwrap())
            .await
            .unwrap();
        gate.release();
        let _ = a.await;
        match b.await {
            TurnOutcome::Discarded {
                cause: CancelCause::User,
            } => {}
            TurnOutcome::Ended {
                turn: 2,
                reason:
                    TurnEndReason::Aborted {
                        cause: CancelCause::User,
                    },
            } => {}
            other => panic!("B must not complete: {other:?}"),
        }
        validate_log(&agent.session().events());
        handle.dispose().await;
    }
}
