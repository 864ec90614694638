//! Edge paths of the plan: a loop failure inside the driver, barriers failing before a body
//! and after a turn, a teardown waiting out a stubborn body's grace, messages sent from a
//! cancel listener, injection during a final step, an unbalanced log refused on resume.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use dsh_agent::{AgentEvent, CancelCause, CreateAgent, TurnEndReason, TurnOutcome};
use dsh_llm::FinishReason;
use dsh_session::{Interest, Session, SessionObserver};
use dsh_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use futures::future::BoxFuture;

use crate::support::*;

/// A tool whose schema panics: building the request fails inside the loop itself.
struct BrokenSchema;

impl Tool for BrokenSchema {
    fn schema(&self) -> ToolSchema {
        if std::thread::panicking() {
            return ToolSchema {
                name: "broken".into(),
                description: String::new(),
                parameters: serde_json::json!({}),
            };
        }
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        // The registry reads the name once at registration; every later read panics.
        if CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
            return ToolSchema {
                name: "broken".into(),
                description: "panics".into(),
                parameters: serde_json::json!({"type": "object"}),
            };
        }
        panic!("the schema exploded");
    }
    fn call(
        &self,
        _: serde_json::Value,
        _: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("never")) })
    }
}

#[tokio::test]
async fn a_failure_inside_the_loop_ends_the_turn_internal_and_the_next_message_runs() {
    let h = Harness::new(ScriptedModel::new(vec![say("after")])).await;
    let plugin = h.runtime.scope().child("plugin:broken").unwrap();
    h.tools().register(&plugin, Arc::new(BrokenSchema)).unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let first = agent.send(user("a")).unwrap().await;
    assert_eq!(error_code(&first).as_deref(), Some("internal"), "{first:?}");
    validate_log(&agent.session().events());
    plugin.dispose().await;
    assert_eq!(agent.send(user("b")).unwrap().await, completed(2));
    handle.dispose().await;
}

/// Fails the barrier whose ordinal (from 1) is `fail_at`.
struct FailNth {
    seen: AtomicUsize,
    fail_at: usize,
}

#[async_trait::async_trait]
impl SessionObserver for FailNth {
    fn name(&self) -> &str {
        "fail-nth"
    }
    async fn on_flush(&self, _session: &Session) -> Result<(), dsh_kernel::BoxError> {
        if self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.fail_at {
            return Err("the disk went away".into());
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_failed_barrier_before_a_body_runs_no_body_and_ends_the_turn_persistence() {
    let model = ScriptedModel::new(vec![vec![
        Act::Call("c1", "echo", "{}"),
        Act::Call("c2", "echo", "{}"),
        Act::Finish(FinishReason::ToolCalls),
    ]]);
    let h = Harness::new(model).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    // Barrier 1 guards the request; barrier 2 guards the first body.
    h.store
        .subscribe(
            h.runtime.scope(),
            Interest::All,
            Arc::new(FailNth {
                seen: AtomicUsize::new(0),
                fail_at: 2,
            }),
        )
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let outcome = agent.send(user("go")).unwrap().await;
    assert_eq!(
        error_code(&outcome).as_deref(),
        Some("persistence"),
        "{outcome:?}"
    );
    assert!(seen.lock().unwrap().is_empty());
    let events = agent.session().events();
    validate_log(&events);
    let codes: Vec<_> = events
        .iter()
        .filter(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e)["error_code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes, ["tool_not_started", "tool_not_started"]);
    handle.dispose().await;
}

#[tokio::test]
async fn a_failed_barrier_after_a_turn_keeps_its_outcome_and_the_next_turn_tries_again() {
    let h = Harness::new(ScriptedModel::new(vec![say("one"), say("two")])).await;
    let failing = Arc::new(FailNth {
        seen: AtomicUsize::new(0),
        fail_at: 2,
    });
    h.store
        .subscribe(h.runtime.scope(), Interest::All, failing.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("a")).unwrap().await, completed(1));
    assert_eq!(agent.send(user("b")).unwrap().await, completed(2));
    assert!(
        failing.seen.load(Ordering::SeqCst) >= 3,
        "the next pre-request barrier ran"
    );
    handle.dispose().await;
}

#[tokio::test(start_paused = true)]
async fn a_teardown_waits_out_a_stubborn_bodys_grace_and_records_its_unknown_outcome() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![call("c1", "stubborn", "{}")]);
    let h = Harness::persistent(model).await;
    let mut stubborn = Probe::new("stubborn");
    stubborn.stubborn = true;
    stubborn.gate = Some(gate.clone());
    h.add_tool(stubborn);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    gate.entered().await;
    let begun = tokio::time::Instant::now();
    handle.dispose().await;
    assert!(begun.elapsed() >= Duration::from_secs(2));
    assert_eq!(
        ticket.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Aborted {
                cause: CancelCause::Disposed
            }
        }
    );
    let dir = h.dir.as_ref().unwrap().path();
    let text = std::fs::read_to_string(stored_log(dir)).unwrap();
    assert!(text.contains("tool_outcome_unknown"), "{text}");
    assert!(
        text.trim_end().ends_with(r#""cause":"disposed"}}}"#),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_from_a_cancel_listener_survives_and_runs_next() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![Act::Gate(gate.clone()), Act::Hang], say("b")]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    let weak = Arc::downgrade(&agent);
    h.runtime
        .scope()
        .on(move |e: &AgentEvent| {
            if let AgentEvent::CancelRequested { .. } = e
                && let (Some(tx), Some(agent)) = (tx.lock().unwrap().take(), weak.upgrade())
            {
                let _ = tx.send(agent.send(user("B")).unwrap());
            }
        })
        .unwrap();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let idle = agent.when_idle();
    assert!(agent.cancel(CancelCause::User));
    let b = rx.await.unwrap();
    assert!(matches!(
        a.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Aborted { .. }
        }
    ));
    assert_eq!(b.await, completed(2));
    idle.await;
    assert!(
        !agent.cancel(CancelCause::User),
        "nothing is left to cancel"
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_injected_during_the_final_step_waits_for_the_next_turn() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![
            Act::Gate(gate.clone()),
            Act::Text("one"),
            Act::Finish(FinishReason::Stop),
        ],
        say("two"),
    ]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let n = agent.inject(user("N")).unwrap();
    gate.release();
    assert_eq!(a.await, completed(1));
    assert_eq!(model.calls(), 1, "the injected message took no extra step");
    agent.when_idle().await;
    let b = agent.send(user("B")).unwrap();
    assert_eq!(b.await, completed(2));
    assert_eq!(n.await, completed(2));
    assert_eq!(last_user_texts(&model.request(1), 1), ["N\n\nB"]);
    handle.dispose().await;
}

#[tokio::test]
async fn a_fresh_create_over_a_retiring_id_without_persistence_waits_and_succeeds() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let id = dsh_session::SessionId::parse("x").unwrap();
    let old = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id.clone())
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    old.teardown().start();
    let fresh = h
        .registry()
        .create(CreateAgent::new(h.owner()).with_id(id).with_cwd("/w"))
        .await
        .unwrap();
    assert!(old.is_disposed());
    assert!(fresh.agent().session().events().is_empty());
    fresh.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_sent_while_a_tool_runs_opens_the_next_step_after_the_results() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![call("c1", "slow", "{}"), say("done")]);
    let h = Harness::new(model.clone()).await;
    let mut slow = Probe::new("slow");
    slow.gate = Some(gate.clone());
    h.add_tool(slow);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let s = agent.steer(user("S")).unwrap();
    gate.release();
    assert_eq!(a.await, completed(1));
    assert_eq!(s.await, completed(1));
    let kinds = kinds(&agent.session().events());
    let result = kinds.iter().position(|k| k == "tool/result").unwrap();
    let second_step = kinds.iter().rposition(|k| k == "step/start").unwrap();
    assert!(result < second_step);
    assert_eq!(kinds[second_step + 1], "user/message", "S opens step 2");
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_corrupted_log_fails_with_the_persistence_error_and_leaves_the_file_alone() {
    let h = Harness::persistent(ScriptedModel::new(vec![say("one"), say("two")])).await;
    let id = dsh_session::SessionId::parse("bent").unwrap();
    let first = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_id(id.clone())
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    first.agent().send(user("a")).unwrap().await;
    first.agent().send(user("b")).unwrap().await;
    first.dispose().await;
    let file = stored_log(h.dir.as_ref().unwrap().path());
    let mut bytes = std::fs::read(&file).unwrap();
    // Damage a record well before the last completed turn.
    let at = bytes.iter().position(|b| *b == b'\n').unwrap() + 3;
    bytes[at] = b'#';
    std::fs::write(&file, &bytes).unwrap();
    let resumed = h
        .registry()
        .resume(dsh_agent::ResumeAgent::new(h.owner(), id))
        .await;
    assert!(
        matches!(&resumed, Err(dsh_agent::AgentError::Persistence(_))),
        "{resumed:?}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        bytes,
        "the file is left as it was"
    );
    assert!(h.store.list_live().is_empty());
}
