//! Which turn and step claims each message, and in which order things happen: steering and
//! follow-ups at step and turn boundaries, duplicate message ids, cancellation right after an
//! answer and during approval, provider panics and contract violations, exclusive calls
//! against the pool, and tickets resolved after the post-turn barrier.

use std::sync::{Arc, Mutex};

use dsh_agent::{
    AgentError, CancelCause, CreateAgent, MessageId, TurnEndReason, TurnOutcome, UserMessage,
};
use dsh_llm::{FinishReason, Message, ModelEvent};
use dsh_session::{Interest, Session, SessionEvent, SessionObserver};
use dsh_tools::{
    ApprovalDecision, ApprovalGate, ApprovalRequest, Tool, ToolContext, ToolError, ToolOutput,
    ToolSchema,
};
use futures::future::BoxFuture;

use crate::support::*;

#[tokio::test]
async fn steering_an_idle_agent_opens_one_turn() {
    let model = ScriptedModel::new(vec![say("ok")]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    assert_eq!(handle.agent().steer(user("S")).unwrap().await, completed(1));
    assert_eq!(model.calls(), 1);
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_steps_pending_steering_and_follow_ups_open_the_next_turn_in_order() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![
            Act::Gate(gate.clone()),
            Act::Call("c", "echo", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("turn two"),
    ]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let handle = h.agent_with(max_steps(1)).await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let s = agent.steer(user("S")).unwrap();
    let b = agent.send(user("B")).unwrap();
    gate.release();
    assert!(matches!(
        a.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::MaxSteps
        }
    ));
    assert_eq!(s.await, completed(2));
    assert_eq!(b.await, completed(2));
    assert_eq!(
        last_user_texts(&model.request(1), 1),
        ["S\n\nB"],
        "consecutive user messages are merged"
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_id_already_pending_is_refused_and_the_pending_one_still_runs() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![Act::Gate(gate.clone()), Act::Finish(FinishReason::Stop)],
        say("b"),
    ]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let _a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let id = MessageId::from_string("dup");
    let with_id = |text: &str| UserMessage {
        id: id.clone(),
        ..UserMessage::user(text)
    };
    let b = agent.send(with_id("B")).unwrap();
    assert!(matches!(
        agent.send(with_id("again")),
        Err(AgentError::DuplicateMessage { .. })
    ));
    gate.release();
    assert_eq!(b.await, completed(2));
    handle.dispose().await;
}

#[tokio::test]
async fn a_cancel_right_after_the_answer_runs_no_tool_and_answers_every_call() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("c1", "echo", "{}"),
            Act::Call("c2", "echo", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("next"),
    ]);
    let h = Harness::new(model.clone()).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    struct CancelOn(Mutex<Option<Arc<dyn dsh_agent::Agent>>>);
    impl SessionObserver for CancelOn {
        fn name(&self) -> &str {
            "cancel-on"
        }
        fn on_append(&self, _s: &Session, event: &Arc<SessionEvent>) {
            if event.kind.as_str() == "assistant/message"
                && let Some(agent) = self.0.lock().unwrap().take()
            {
                agent.cancel(CancelCause::User);
            }
        }
    }
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    h.store
        .subscribe(
            h.runtime.scope(),
            Interest::Session(agent.id().clone()),
            Arc::new(CancelOn(Mutex::new(Some(agent.clone())))),
        )
        .unwrap();
    assert_eq!(
        agent.send(user("go")).unwrap().await,
        aborted(1, CancelCause::User)
    );
    assert!(seen.lock().unwrap().is_empty(), "no body ran");
    let events = agent.session().events();
    validate_log(&events);
    let results: Vec<_> = events
        .iter()
        .filter(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e))
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results
            .iter()
            .all(|r| r["error_code"] == "tool_not_started" && r.get("call_seq").is_none())
    );
    assert!(!kinds(&events).contains(&"tool/call".to_owned()));
    assert_eq!(agent.send(user("again")).unwrap().await, completed(2));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_approval_is_pending_withdraws_it_and_runs_nothing() {
    struct Waits(Mutex<Option<tokio::sync::oneshot::Sender<()>>>);
    #[async_trait::async_trait]
    impl ApprovalGate for Waits {
        fn mode(&self) -> dsh_tools::PermissionMode {
            dsh_tools::PermissionMode::Ask
        }

        async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
            if let Some(tx) = self.0.lock().unwrap().take() {
                let _ = tx.send(());
            }
            request.cancel.cancelled().await;
            ApprovalDecision::Cancelled
        }
    }
    let model = ScriptedModel::new(vec![call("c", "guarded", "{}")]);
    let h = Harness::new(model).await;
    let mut guarded = Probe::new("guarded");
    guarded.approval = true;
    let seen = guarded.seen.clone();
    h.add_tool(guarded);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let handle = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_cwd("/w")
                .with_approval(Arc::new(Waits(Mutex::new(Some(tx))))),
        )
        .await
        .unwrap();
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    rx.await.unwrap();
    assert!(agent.cancel(CancelCause::User));
    assert_eq!(ticket.await, aborted(1, CancelCause::User));
    assert!(seen.lock().unwrap().is_empty());
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test]
async fn a_provider_panic_or_a_broken_stream_ends_the_turn_error_and_the_agent_goes_on() {
    let model = ScriptedModel::new(vec![
        vec![Act::Text("so"), Act::Panic],
        vec![
            Act::Raw(ModelEvent::TextDelta(String::new())),
            Act::Finish(FinishReason::Stop),
        ],
        vec![Act::Finish(FinishReason::Stop)],
        say("fine"),
    ]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(
        error_code(&agent.send(user("a")).unwrap().await).as_deref(),
        Some("internal")
    );
    let broken = agent.send(user("b")).unwrap().await;
    if cfg!(debug_assertions) {
        assert_eq!(
            error_code(&broken).as_deref(),
            Some("protocol"),
            "{broken:?}"
        );
    }
    // An empty completion is a completed turn; its empty message carries usage only.
    assert_eq!(agent.send(user("c")).unwrap().await, completed(3));
    assert_eq!(agent.send(user("d")).unwrap().await, completed(4));
    let last = model.request(3).messages;
    assert!(
        !last
            .iter()
            .any(|m| matches!(m, Message::Assistant { content, .. } if content.is_empty()))
    );
    validate_log(&agent.session().events());
    handle.dispose().await;
}

/// Records when each body starts and ends, across tools.
struct Ordered {
    name: &'static str,
    parallel: bool,
    log: Arc<Mutex<Vec<String>>>,
}

impl Tool for Ordered {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.into(),
            description: "ordered".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn parallel_safe(&self) -> bool {
        self.parallel
    }
    fn call(
        &self,
        args: serde_json::Value,
        _cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let log = self.log.clone();
        let tag = args["tag"].as_str().unwrap_or("?").to_owned();
        Box::pin(async move {
            log.lock().unwrap().push(format!("start {tag}"));
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            log.lock().unwrap().push(format!("end {tag}"));
            Ok(ToolOutput::text(tag))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exclusive_call_waits_for_the_pool_before_it_and_holds_back_the_calls_after_it() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("1", "p", r#"{"tag":"p1"}"#),
            Act::Call("2", "p", r#"{"tag":"p2"}"#),
            Act::Call("3", "x", r#"{"tag":"x"}"#),
            Act::Call("4", "p", r#"{"tag":"p3"}"#),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("ok"),
    ]);
    let h = Harness::new(model).await;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    h.add_tool(Ordered {
        name: "p",
        parallel: true,
        log: log.clone(),
    });
    h.add_tool(Ordered {
        name: "x",
        parallel: false,
        log: log.clone(),
    });
    let handle = h.agent().await;
    handle.agent().send(user("go")).unwrap().await;
    let log = log.lock().unwrap().clone();
    let at = |e: &str| log.iter().position(|l| l == e).unwrap();
    assert!(
        at("end p1") < at("start x") && at("end p2") < at("start x"),
        "{log:?}"
    );
    assert!(at("end x") < at("start p3"), "{log:?}");
    handle.dispose().await;
}

#[tokio::test]
async fn a_ticket_resolves_after_every_observer_saw_turn_end_and_after_the_barrier() {
    #[derive(Default)]
    struct Sees(Mutex<Vec<String>>);
    #[async_trait::async_trait]
    impl SessionObserver for Sees {
        fn name(&self) -> &str {
            "sees"
        }
        fn on_append(&self, _s: &Session, event: &Arc<SessionEvent>) {
            if event.kind.as_str() == "turn/end" {
                self.0.lock().unwrap().push("turn/end appended".into());
            }
        }
        async fn on_flush(&self, session: &Session) -> Result<(), dsh_kernel::BoxError> {
            let ended = session
                .events()
                .last()
                .is_some_and(|e| e.kind.as_str() == "turn/end");
            if ended {
                self.0.lock().unwrap().push("flushed after turn/end".into());
            }
            Ok(())
        }
    }
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let sees = Arc::new(Sees::default());
    h.store
        .subscribe(h.runtime.scope(), Interest::All, sees.clone())
        .unwrap();
    let handle = h.agent().await;
    handle.agent().send(user("a")).unwrap().await;
    assert_eq!(
        *sees.0.lock().unwrap(),
        ["turn/end appended", "flushed after turn/end"]
    );
    handle.dispose().await;
}
