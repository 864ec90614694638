//! Containment and edge paths: panicking listeners and observers, a session that stops
//! accepting events, a never-used agent's teardown, verbs during teardown, vetoed creation,
//! resuming a crash-repaired log, oversized and out-of-order tool results, registry changes
//! between steps.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_agent::{
    AgentError, AgentEvent, AgentStatus, CancelCause, CreateAgent, ResumeAgent, TurnOutcome,
};
use dsh_llm::{FinishReason, Message};
use dsh_session::{Interest, Session, SessionEvent, SessionId, SessionObserver};
use dsh_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use futures::future::BoxFuture;

use crate::support::*;

#[tokio::test]
async fn a_never_used_agent_tears_down_to_nothing_and_then_refuses_everything() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    handle.dispose().await;
    assert_eq!(h.event_names(), ["agent/created", "agent/disposed"]);
    assert!(agent.session().events().is_empty());
    assert!(h.store.list_live().is_empty());
    assert!(handle.is_disposed());
    assert_eq!(agent.status(), AgentStatus::Idle);
    agent.when_idle().await;
    assert!(!agent.cancel(CancelCause::User));
    for refused in [
        agent.send(user("a")),
        agent.steer(user("b")),
        agent.inject(user("c")),
    ] {
        assert!(matches!(refused, Err(AgentError::Disposed { .. })));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_are_discarded_by_a_teardown_and_never_run() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![Act::Gate(gate.clone()), Act::Hang]]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let _a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let b = agent.send(user("B")).unwrap();
    let n = agent.inject(user("N")).unwrap();
    handle.dispose().await;
    for ticket in [b, n] {
        assert_eq!(
            ticket.await,
            TurnOutcome::Discarded {
                cause: CancelCause::Disposed
            }
        );
    }
    assert_eq!(model.calls(), 1, "no turn 2");
}

#[tokio::test]
async fn panicking_listeners_change_no_outcome() {
    let h = Harness::new(ScriptedModel::new(vec![say("one"), say("two")])).await;
    h.runtime
        .scope()
        .on(|e: &AgentEvent| -> () { panic!("listener exploded on {}", e.name()) })
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("a")).unwrap().await, completed(1));
    agent.when_idle().await;
    assert_eq!(agent.send(user("b")).unwrap().await, completed(2));
    let statuses = h
        .event_names()
        .into_iter()
        .filter(|e| e.starts_with("status"))
        .count();
    assert_eq!(statuses, 4, "every change still reported");
    handle.dispose().await;
    assert!(h.store.list_live().is_empty());
}

struct Exploding;

impl SessionObserver for Exploding {
    fn name(&self) -> &str {
        "exploding"
    }
    fn on_append(&self, _session: &Session, event: &Arc<SessionEvent>) {
        panic!("observer exploded at seq {}", event.seq);
    }
}

#[tokio::test]
async fn a_panicking_append_observer_changes_neither_outcomes_nor_the_log() {
    let run = |explode: bool| async move {
        let model = ScriptedModel::new(vec![call("c1", "echo", "{}"), say("done")]);
        let h = Harness::new(model).await;
        h.add_tool(Probe::new("echo"));
        if explode {
            h.store
                .subscribe(h.runtime.scope(), Interest::All, Arc::new(Exploding))
                .unwrap();
        }
        let handle = h.agent().await;
        let agent = handle.agent().clone();
        let outcome = agent.send(user("go")).unwrap().await;
        let kinds = kinds(&agent.session().events());
        handle.dispose().await;
        (outcome, kinds)
    };
    assert_eq!(run(true).await, run(false).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_stops_accepting_events_still_resolves_every_ticket() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Gate(gate.clone()),
        Act::Text("late"),
        Act::Finish(FinishReason::Stop),
    ]]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    // Someone detaches the session under the running turn: later appends are refused.
    h.store.detach(agent.session()).await.unwrap();
    gate.release();
    assert!(matches!(a.await, TurnOutcome::Ended { turn: 1, .. }));
    agent.when_idle().await;
    assert_eq!(agent.status(), AgentStatus::Idle);
    match agent.send(user("B")).unwrap().await {
        TurnOutcome::Failed { failure } => assert_eq!(failure.code, "session"),
        other => panic!("{other:?}"),
    }
    handle.dispose().await;
}

#[tokio::test]
async fn a_listener_sending_during_teardown_is_refused_and_teardown_completes() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let refused = Arc::new(AtomicBool::new(false));
    let (seen, weak) = (refused.clone(), Arc::downgrade(&agent));
    h.runtime
        .scope()
        .on(move |e: &AgentEvent| {
            if let AgentEvent::Disposed { .. } = e
                && let Some(agent) = weak.upgrade()
            {
                seen.store(
                    matches!(agent.send(user("late")), Err(AgentError::Disposed { .. })),
                    Ordering::SeqCst,
                );
            }
        })
        .unwrap();
    handle.dispose().await;
    assert!(refused.load(Ordering::SeqCst));
}

struct Veto;

#[async_trait::async_trait]
impl SessionObserver for Veto {
    fn name(&self) -> &str {
        "veto"
    }
    async fn on_created(&self, _s: &Session, _from: u64) -> Result<(), dsh_kernel::BoxError> {
        Err("not today".into())
    }
}

#[tokio::test]
async fn a_vetoed_announcement_registers_nothing_and_frees_the_id() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let veto = h.runtime.scope().child("veto").unwrap();
    h.store
        .subscribe(&veto, Interest::All, Arc::new(Veto))
        .unwrap();
    let id = SessionId::parse("vetoed").unwrap();
    let refused = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id.clone())
                .with_cwd("/w"),
        )
        .await;
    assert!(
        matches!(refused, Err(AgentError::Session(_))),
        "{refused:?}"
    );
    assert!(h.registry().list().is_empty());
    assert_eq!(h.count("agent/created"), 0);
    veto.dispose().await;
    let again = h
        .registry()
        .create(CreateAgent::new(h.owner()).with_id(id).with_cwd("/w"))
        .await
        .unwrap();
    again.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_repaired_log_resumes_with_synthesised_results_and_the_next_turn_number() {
    use dsh_session::SessionPersistence;
    let model = ScriptedModel::new(vec![say("after the crash")]);
    let h = Harness::persistent(model.clone()).await;
    // A log cut mid-step by a crash: two calls asked for, one recorded, no results, no ends.
    let writer = dsh_test_providers::providers::JsonlPersistence::new(
        dsh_test_providers::providers::JsonlConfig::new(h.dir.as_ref().unwrap().path()),
    )
    .unwrap();
    let header = dsh_session::SessionHeader {
        version: 1,
        id: SessionId::parse("crashed").unwrap(),
        created_at: 1_796_000_000_000,
        cwd: "/w".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    };
    writer
        .create(&header, dsh_session::Origin::New)
        .await
        .unwrap();
    let records = [
        ("turn/start", r#"{"turn":1}"#),
        ("step/start", r#"{"turn":1,"step":1}"#),
        (
            "user/message",
            r#"{"turn":1,"step":1,"message":{"id":"m","text":"do two things","source":{"kind":"user"}}}"#,
        ),
        (
            "assistant/message",
            r#"{"turn":1,"step":1,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"echo","arguments":"{}"},{"id":"c2","name":"echo","arguments":"{}"}]},"model":"m","finish":"tool_calls"}"#,
        ),
        (
            "tool/call",
            r#"{"turn":1,"step":1,"call_id":"c1","name":"echo","arguments":"{}"}"#,
        ),
    ];
    let events: Vec<_> = records
        .iter()
        .enumerate()
        .map(|(seq, (kind, data))| {
            Arc::new(SessionEvent {
                seq: seq as u64,
                kind: dsh_session::EventType::new(kind).unwrap(),
                time: 1_796_000_000_001 + seq as i64,
                ignorable: false,
                data: serde_json::value::RawValue::from_string((*data).into()).unwrap(),
            })
        })
        .collect();
    writer.append(&header.id, &events).await.unwrap();
    writer
        .close(&header.id, dsh_session::CloseIntent::Flush)
        .await
        .unwrap();

    let resumed = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), header.id.clone()))
        .await
        .unwrap();
    let agent = resumed.agent().clone();
    assert_eq!(agent.send(user("go on")).unwrap().await, completed(2));
    let request = model.request(0);
    let answered = request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool { .. }))
        .count();
    assert_eq!(
        answered, 2,
        "both calls were answered by repair: {request:?}"
    );
    validate_log(&agent.session().events());
    resumed.dispose().await;
}

struct Huge;

impl Tool for Huge {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "huge".into(),
            description: "returns too much".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn call(
        &self,
        _args: serde_json::Value,
        _cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("x".repeat(dsh_session::MAX_EVENT_BYTES))) })
    }
}

#[tokio::test]
async fn an_oversized_result_is_recorded_as_output_too_large_and_the_turn_goes_on() {
    let model = ScriptedModel::new(vec![call("c1", "huge", "{}"), say("ok")]);
    let h = Harness::new(model).await;
    h.add_tool(Huge);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let result = agent
        .session()
        .events()
        .iter()
        .find(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e))
        .unwrap();
    assert_eq!(result["error_code"], "output_too_large");
    assert!(result["content"].as_str().unwrap().contains("bytes"));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_appended_in_model_order_whatever_the_completion_order() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("first", "slow", "{}"),
            Act::Call("second", "fast", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("ok"),
    ]);
    let h = Harness::new(model).await;
    let (slow_gate, fast_gate) = (Gate::default(), Gate::default());
    let mut slow = Probe::new("slow");
    slow.parallel = true;
    slow.gate = Some(slow_gate.clone());
    let mut fast = Probe::new("fast");
    fast.parallel = true;
    fast.gate = Some(fast_gate.clone());
    h.add_tool(slow);
    h.add_tool(fast);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    slow_gate.entered().await;
    fast_gate.entered().await;
    fast_gate.release();
    slow_gate.release();
    assert_eq!(ticket.await, completed(1));
    let order: Vec<_> = agent
        .session()
        .events()
        .iter()
        .filter(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e)["call_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(order, ["first", "second"]);
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_withdrawn_mid_step_still_runs_in_that_step_and_is_gone_from_the_next_request() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![
            Act::Gate(gate.clone()),
            Act::Call("c1", "temp", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("ok"),
    ]);
    let h = Harness::new(model.clone()).await;
    let plugin = h.runtime.scope().child("plugin:temp").unwrap();
    h.tools()
        .register(&plugin, Arc::new(Probe::new("temp")))
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    gate.entered().await;
    plugin.dispose().await;
    gate.release();
    assert_eq!(ticket.await, completed(1));
    let result = agent
        .session()
        .events()
        .iter()
        .find(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e))
        .unwrap();
    assert_eq!(
        result["is_error"], false,
        "the step's snapshot still had it"
    );
    assert!(model.request(0).tools.iter().any(|t| t.name == "temp"));
    assert!(model.request(1).tools.is_empty());
    handle.dispose().await;
}

#[test]
fn the_log_validator_refuses_broken_logs() {
    fn event(seq: u64, kind: &str, data: &str) -> Arc<SessionEvent> {
        Arc::new(SessionEvent {
            seq,
            kind: dsh_session::EventType::new(kind).unwrap(),
            time: 1,
            ignorable: false,
            data: serde_json::value::RawValue::from_string(data.into()).unwrap(),
        })
    }
    let open_turn = vec![event(0, "turn/start", r#"{"turn":1}"#)];
    let unanswered = vec![
        event(0, "turn/start", r#"{"turn":1}"#),
        event(1, "step/start", r#"{"turn":1,"step":1}"#),
        event(
            2,
            "assistant/message",
            r#"{"turn":1,"step":1,"message":{"role":"assistant","content":"","tool_calls":[{"id":"c","name":"t","arguments":"{}"}]}}"#,
        ),
        event(3, "step/end", r#"{"turn":1,"step":1}"#),
        event(4, "turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
    ];
    let outside = vec![event(
        0,
        "user/message",
        r#"{"turn":1,"step":1,"message":{"text":"x"}}"#,
    )];
    for broken in [open_turn, unanswered, outside] {
        let refused = std::panic::catch_unwind(|| validate_log(&broken));
        assert!(refused.is_err());
    }
}
