//! Turns and steps: what a turn writes, tickets, follow-ups, steering, injection, failures.

use dsh_agent::{AgentStatus, TurnEndReason, TurnOutcome};
use dsh_llm::{FinishReason, Message, ModelErrorKind};

use crate::support::*;

#[tokio::test]
async fn a_send_runs_one_turn_and_its_ticket_ends_after_turn_end() {
    let model = ScriptedModel::new(vec![vec![
        Act::Text("Hel"),
        Act::Text("lo"),
        Act::Finish(FinishReason::Stop),
    ]]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.id(), agent.session().id());

    let ticket = agent.send(user("hi")).unwrap();
    assert_eq!(
        agent.status(),
        AgentStatus::Running,
        "running as the verb returns"
    );
    let outcome = ticket.await;

    assert_eq!(
        outcome,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Completed
        }
    );
    let events = agent.session().events();
    assert_eq!(
        kinds(&events),
        [
            "turn/start",
            "step/start",
            "user/message",
            "session/title",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );
    validate_log(&events);
    assert_eq!(data(&events[6])["message"]["content"], "Hello");
    agent.when_idle().await;
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert_eq!(
        h.event_names(),
        ["agent/created", "status:Running", "status:Idle"]
    );
    let request = model.request(0);
    assert_eq!(request.session_id.as_deref(), Some(agent.id().as_str()));
    assert_eq!(
        request.messages,
        [Message::User {
            content: "hi".into()
        }]
    );
    handle.dispose().await;
}

#[tokio::test]
async fn follow_ups_sent_back_to_back_run_as_consecutive_turns_in_one_interval() {
    let model = ScriptedModel::new(vec![say("one"), say("two"), say("three")]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let tickets: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|t| agent.send(user(t)).unwrap())
        .collect();
    for (i, ticket) in tickets.into_iter().enumerate() {
        assert_eq!(
            ticket.await,
            TurnOutcome::Ended {
                turn: i as u32 + 1,
                reason: TurnEndReason::Completed
            }
        );
    }
    agent.when_idle().await;
    assert_eq!(
        model.request(1).messages,
        [
            Message::User {
                content: "a".into()
            },
            Message::Assistant {
                content: "one".into(),
                reasoning: None,
                tool_calls: vec![]
            },
            Message::User {
                content: "b".into()
            },
        ]
    );
    let statuses: Vec<_> = h
        .event_names()
        .into_iter()
        .filter(|e| e.starts_with("status"))
        .collect();
    assert_eq!(statuses, ["status:Running", "status:Idle"]);
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test]
async fn steering_sent_during_a_step_makes_the_turn_take_another_step() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![
        vec![
            Act::Gate(gate.clone()),
            Act::Text("first"),
            Act::Finish(FinishReason::Stop),
        ],
        say("second"),
    ]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let a = agent.send(user("A")).unwrap();
    gate.entered().await;
    let s = agent.steer(user("S")).unwrap();
    gate.release();
    let ended = TurnOutcome::Ended {
        turn: 1,
        reason: TurnEndReason::Completed,
    };
    assert_eq!(a.await, ended);
    assert_eq!(s.await, ended);
    assert_eq!(model.calls(), 2);
    let last = model.request(1).messages;
    assert_eq!(
        last.last(),
        Some(&Message::User {
            content: "S".into()
        })
    );
    handle.dispose().await;
}

#[tokio::test]
async fn an_injected_message_never_opens_a_turn_and_rides_with_the_next_one() {
    let model = ScriptedModel::new(vec![say("ok")]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let n = agent.inject(user("notice")).unwrap();
    assert_eq!(agent.status(), AgentStatus::Idle);
    agent.when_idle().await;
    assert!(agent.session().events().is_empty());
    assert!(
        !agent.cancel(dsh_agent::CancelCause::User),
        "a parked inject is not cancellable"
    );

    let a = agent.send(user("A")).unwrap();
    assert_eq!(a.await, n.await);
    assert_eq!(
        model.request(0).messages,
        [Message::User {
            content: "notice\n\nA".into()
        }],
        "claimed in one step, merged into one message"
    );
    handle.dispose().await;
}

#[tokio::test]
async fn bad_messages_are_refused_and_change_nothing() {
    let model = ScriptedModel::new(vec![]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    for text in ["", "   \n\t"] {
        assert!(matches!(
            agent.send(user(text)),
            Err(dsh_agent::AgentError::InvalidMessage { .. })
        ));
    }
    let huge = "x".repeat(dsh_session::MAX_EVENT_BYTES);
    assert!(matches!(
        agent.send(user(&huge)),
        Err(dsh_agent::AgentError::InvalidMessage { .. })
    ));
    assert_eq!(agent.status(), AgentStatus::Idle);
    assert!(agent.session().events().is_empty());
    assert_eq!(model.calls(), 0);
    handle.dispose().await;
}

#[tokio::test]
async fn a_model_failure_ends_the_turn_error_and_the_next_send_runs() {
    let model = ScriptedModel::new(vec![
        vec![Act::Fail(ModelErrorKind::RateLimited)],
        vec![Act::Text("partial"), Act::Fail(ModelErrorKind::Server)],
        say("fine"),
    ]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let first = agent.send(user("a")).unwrap().await;
    match first {
        TurnOutcome::Ended {
            reason: TurnEndReason::Error { failure },
            ..
        } => assert_eq!(failure.code, "rate_limited"),
        other => panic!("{other:?}"),
    }
    let second = agent.send(user("b")).unwrap().await;
    assert!(matches!(
        second,
        TurnOutcome::Ended {
            turn: 2,
            reason: TurnEndReason::Error { .. }
        }
    ));
    let events = agent.session().events();
    let interrupted = events
        .iter()
        .find(|e| e.kind.as_str() == "assistant/message")
        .map(|e| data(e))
        .unwrap();
    assert_eq!(interrupted["interrupted"], true);
    assert_eq!(interrupted["message"]["content"], "partial");
    assert!(matches!(
        agent.send(user("c")).unwrap().await,
        TurnOutcome::Ended {
            turn: 3,
            reason: TurnEndReason::Completed
        }
    ));
    // The failed-before-answer prompt "a" stays in the history, merged with the next one.
    let third = model.request(2).messages;
    assert!(
        third.contains(&Message::User {
            content: "a\n\nb".into()
        }),
        "{third:?}"
    );
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test]
async fn finish_length_and_content_filter_end_the_turn_without_running_tools() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("c1", "echo", "{}"),
            Act::Finish(FinishReason::Length),
        ],
        vec![Act::Text("no"), Act::Finish(FinishReason::ContentFilter)],
    ]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert!(matches!(
        agent.send(user("a")).unwrap().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::MaxTokens,
            ..
        }
    ));
    assert!(matches!(
        agent.send(user("b")).unwrap().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Refusal,
            ..
        }
    ));
    let events = agent.session().events();
    assert!(!kinds(&events).contains(&"tool/call".to_owned()));
    validate_log(&events);
    handle.dispose().await;
}

#[tokio::test]
async fn a_missing_model_ends_each_turn_service_unavailable_without_parking() {
    let model = ScriptedModel::new(vec![]);
    let h = Harness::new(model.clone()).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    // Withdraw the model by disposing a stand-in scope that provides a second one is not
    // possible (one provider per type), so run with a fresh runtime without a model instead.
    drop(agent);
    handle.dispose().await;

    let runtime = dsh_kernel::Runtime::new();
    let store = dsh_session::SessionStore::new();
    runtime
        .scope()
        .provide::<dsh_session::SessionStore>(store)
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
        .create(dsh_agent::CreateAgent::new(runtime.scope().clone()).with_cwd("/w"))
        .await
        .unwrap();
    let agent = handle.agent().clone();
    let a = agent.send(user("a")).unwrap();
    let b = agent.send(user("b")).unwrap();
    for (ticket, turn) in [(a, 1), (b, 2)] {
        match ticket.await {
            TurnOutcome::Ended {
                turn: t,
                reason: TurnEndReason::Error { failure },
            } => {
                assert_eq!(t, turn);
                assert_eq!(failure.code, "service_unavailable");
            }
            other => panic!("{other:?}"),
        }
    }
    validate_log(&agent.session().events());
    runtime.shutdown().await;
    assert_eq!(runtime.live_scopes(), 0);
}

#[tokio::test]
async fn reasoning_is_recorded_and_sent_back_with_its_answer() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Reasoning("think"),
            Act::Text("answer"),
            Act::Finish(FinishReason::Stop),
        ],
        say("again"),
    ]);
    let h = Harness::new(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    agent.send(user("a")).unwrap().await;
    agent.send(user("b")).unwrap().await;
    assert_eq!(
        h.model.request(1).messages[1],
        Message::Assistant {
            content: "answer".into(),
            reasoning: Some("think".into()),
            tool_calls: vec![]
        }
    );
    handle.dispose().await;
}
