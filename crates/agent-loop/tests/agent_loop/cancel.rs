//! Cancellation: the fence, idle cancels, discarded messages, cancels during a stream.

use dsh_agent::{AgentEvent, CancelCause, TurnEndReason, TurnOutcome};
use dsh_agent_loop::CANCELLED_NOTE;
use dsh_llm::{FinishReason, Message};

use crate::support::*;

#[tokio::test]
async fn a_cancel_on_a_fresh_agent_does_nothing() {
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert!(!agent.cancel(CancelCause::User));
    assert_eq!(h.event_names(), ["agent/created"]);
    assert!(matches!(
        agent.send(user("a")).unwrap().await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Completed
        }
    ));
    handle.dispose().await;
}

#[tokio::test]
async fn a_prompt_cancelled_before_its_turn_ran_never_reaches_the_model() {
    // Current-thread runtime: the driver has not run when the cancel lands.
    let model = ScriptedModel::new(vec![say("for b")]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    assert!(agent.cancel(CancelCause::User));
    assert_eq!(a.await, aborted(1, CancelCause::User));
    assert_eq!(model.calls(), 0, "no request for the cancelled prompt");
    assert_eq!(
        kinds(&agent.session().events()),
        [
            "turn/start",
            "step/start",
            "user/message",
            "session/title",
            "step/end",
            "turn/end"
        ]
    );

    let b = agent.send(user("B")).unwrap();
    assert_eq!(
        b.await,
        TurnOutcome::Ended {
            turn: 2,
            reason: TurnEndReason::Completed
        }
    );
    assert_eq!(
        model.request(0).messages,
        [Message::User {
            content: format!("A\n\n{CANCELLED_NOTE}\n\nB")
        }],
        "the cancelled prompt stays in the history, marked as cancelled"
    );
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test]
async fn a_cancel_discards_every_queued_message_and_reports_it_before_the_turn_ends() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Gate(gate.clone()),
        Act::Finish(FinishReason::Stop),
    ]]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let queued = vec![
        agent.send(user("B")).unwrap(),
        agent.send(user("C")).unwrap(),
        agent.steer(user("S")).unwrap(),
        agent.inject(user("N")).unwrap(),
    ];
    assert!(agent.cancel(CancelCause::User));
    for ticket in queued {
        assert_eq!(
            ticket.await,
            TurnOutcome::Discarded {
                cause: CancelCause::User
            }
        );
    }
    assert_eq!(a.await, aborted(1, CancelCause::User));
    agent.when_idle().await;
    let events = h.events.lock().unwrap().clone();
    assert!(events.contains(&AgentEvent::CancelRequested {
        id: agent.id().clone(),
        cause: CancelCause::User,
        turn: Some(1),
        discarded: 4,
    }));
    assert_eq!(model.calls(), 1, "no turn 2");
    assert!(!agent.cancel(CancelCause::Parent), "nothing left to cancel");
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test]
async fn a_message_sent_after_a_cancel_runs_in_its_own_later_turn() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![Act::Gate(gate.clone()), Act::Finish(FinishReason::Stop)],
        say("b done"),
    ]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    assert!(agent.cancel(CancelCause::User));
    let b = agent.send(user("B")).unwrap();
    assert_eq!(a.await, aborted(1, CancelCause::User));
    assert_eq!(
        b.await,
        TurnOutcome::Ended {
            turn: 2,
            reason: TurnEndReason::Completed
        }
    );
    handle.dispose().await;
}

#[tokio::test]
async fn a_stream_that_ignores_its_token_is_dropped_and_the_turn_ends_aborted() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Text("so far"),
        Act::Gate(gate.clone()),
        Act::Hang,
    ]]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    gate.release();
    assert!(agent.cancel(CancelCause::User));
    assert_eq!(a.await, aborted(1, CancelCause::User));
    let events = agent.session().events();
    let message = events
        .iter()
        .find(|e| e.kind.as_str() == "assistant/message")
        .map(|e| data(e))
        .unwrap();
    assert_eq!(message["interrupted"], true);
    assert_eq!(message["message"]["content"], "so far");
    validate_log(&events);
    handle.dispose().await;
}

#[tokio::test]
async fn the_first_cause_wins() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![Act::Gate(gate.clone()), Act::Hang]]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    assert!(agent.cancel(CancelCause::User));
    assert!(!agent.cancel(CancelCause::Parent));
    handle.dispose().await;
    assert_eq!(a.await, aborted(1, CancelCause::User));
}

/// Cancels the agent the first time it sees an event of type `on`, and records the result.
struct CancelAt {
    on: &'static str,
    agent: std::sync::Mutex<Option<std::sync::Arc<dyn dsh_agent::Agent>>>,
    result: std::sync::Mutex<Option<bool>>,
}

impl dsh_session::SessionObserver for CancelAt {
    fn name(&self) -> &str {
        "cancel-at"
    }
    fn on_append(
        &self,
        _s: &dsh_session::Session,
        event: &std::sync::Arc<dsh_session::SessionEvent>,
    ) {
        if event.kind.as_str() == self.on
            && let Some(agent) = self.agent.lock().unwrap().take()
        {
            *self.result.lock().unwrap() = Some(agent.cancel(CancelCause::User));
        }
    }
}

#[tokio::test]
async fn a_cancel_at_any_event_of_a_tool_turn_leaves_a_valid_log_and_starts_nothing_after() {
    for on in [
        "turn/start",
        "step/start",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    ] {
        let model = ScriptedModel::new(vec![
            vec![
                Act::Text("x"),
                Act::Call("c1", "echo", "{}"),
                Act::Finish(FinishReason::ToolCalls),
            ],
            say("after"),
        ]);
        let h = Harness::new(model.clone()).await;
        let probe = Probe::new("echo");
        let bodies = probe.seen.clone();
        h.add_tool(probe);
        let handle = h.agent().await;
        let agent = handle.agent().clone();
        let observer = std::sync::Arc::new(CancelAt {
            on,
            agent: std::sync::Mutex::new(Some(agent.clone())),
            result: Default::default(),
        });
        h.store
            .subscribe(
                h.runtime.scope(),
                dsh_session::Interest::Session(agent.id().clone()),
                observer.clone(),
            )
            .unwrap();
        let outcome = agent.send(user("go")).unwrap().await;
        let events = agent.session().events();
        validate_log(&events);
        let cancelled = observer.result.lock().unwrap().unwrap();
        if on == "turn/end" {
            assert!(!cancelled, "{on}: nothing left to cancel");
            assert_eq!(
                outcome,
                TurnOutcome::Ended {
                    turn: 1,
                    reason: TurnEndReason::Completed
                }
            );
            continue;
        }
        assert!(cancelled, "{on}");
        assert_eq!(outcome, aborted(1, CancelCause::User), "{on}");
        let requests = model.calls();
        let ran = bodies.lock().unwrap().len();
        match on {
            "turn/start" | "step/start" | "user/message" => {
                assert_eq!((requests, ran), (0, 0), "{on}")
            }
            "assistant/chunk" | "assistant/message" | "tool/call" => {
                assert_eq!((requests, ran), (1, 0), "{on}")
            }
            _ => assert_eq!((requests, ran), (1, 1), "{on}: no second request"),
        }
        handle.dispose().await;
    }
}
