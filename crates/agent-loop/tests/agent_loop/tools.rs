//! The tool phase: ordering, pooling, failures, approval, cancellation with grace.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dsh_agent::{CancelCause, CreateAgent, TurnEndReason, TurnOutcome};
use dsh_llm::{FinishReason, Message};
use dsh_tools::{ApprovalDecision, ApprovalGate, ApprovalRequest};

use crate::support::*;

#[tokio::test]
async fn a_tool_call_runs_and_the_next_request_carries_its_result() {
    let model = ScriptedModel::new(vec![call("c1", "echo", r#"{"x":1}"#), say("done")]);
    let h = Harness::new(model.clone()).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(
        agent.send(user("go")).unwrap().await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Completed
        }
    );
    let events = agent.session().events();
    validate_log(&events);
    let result = &results(&events)[0];
    assert_eq!(result["content"], r#"{"x":1}"#);
    assert_eq!(result["is_error"], false);
    assert!(result["call_seq"].is_u64());
    let second = model.request(1).messages;
    assert_eq!(
        second.last(),
        Some(&Message::Tool {
            call_id: "c1".into(),
            content: r#"{"x":1}"#.into()
        })
    );
    let cx = seen.lock().unwrap()[0].clone();
    assert_eq!(cx.caller_id(), Some(agent.id()));
    assert_eq!(cx.call_id(), "c1");
    assert_eq!(cx.position(), Some((1, 1)));
    assert_eq!(cx.session_cwd(), Some(std::path::Path::new("/work")));
    assert!(!cx.cancellation().is_cancelled());
    handle.dispose().await;
}

#[tokio::test]
async fn unknown_tools_bad_arguments_errors_and_panics_are_results_not_turn_failures() {
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("c1", "nope", "{}"),
            Act::Call("c2", "echo", "not json"),
            Act::Call("c3", "echo", r#"{"fail":true}"#),
            Act::Call("c4", "echo", r#"{"panic":true}"#),
            Act::Call("c5", "echo", ""),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("recovered"),
    ]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert!(matches!(
        agent.send(user("go")).unwrap().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Completed,
            ..
        }
    ));
    let events = agent.session().events();
    validate_log(&events);
    let codes: Vec<_> = results(&events)
        .iter()
        .map(|r| r["error_code"].as_str().unwrap_or("ok").to_owned())
        .collect();
    assert_eq!(
        codes,
        [
            "unknown_tool",
            "invalid_arguments",
            "denied",
            "tool_panicked",
            "ok"
        ]
    );
    assert!(
        results(&events)[0]["content"]
            .as_str()
            .unwrap()
            .contains("echo")
    );
    assert_eq!(
        results(&events)[4]["content"],
        "{}",
        "empty arguments are {{}}"
    );
    handle.dispose().await;
}

#[tokio::test]
async fn parallel_safe_calls_run_together_up_to_the_cap_and_results_keep_model_order() {
    let ids = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"];
    let args = [
        r#"{"n":0}"#,
        r#"{"n":1}"#,
        r#"{"n":2}"#,
        r#"{"n":3}"#,
        r#"{"n":4}"#,
        r#"{"n":5}"#,
        r#"{"n":6}"#,
        r#"{"n":7}"#,
        r#"{"n":8}"#,
        r#"{"n":9}"#,
    ];
    let mut acts: Vec<Act> = ids
        .iter()
        .zip(args)
        .map(|(id, args)| Act::Call(id, "pool", args))
        .collect();
    acts.push(Act::Finish(FinishReason::ToolCalls));
    let model = ScriptedModel::new(vec![acts, say("done")]);
    let h = Harness::new(model.clone()).await;
    let gate = Gate::default();
    let mut probe = Probe::new("pool");
    probe.parallel = true;
    probe.gate = Some(gate.clone());
    let peak = probe.peak.clone();
    h.add_tool(probe);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    for _ in 0..8 {
        gate.entered().await;
    }
    // Eight are running; the ninth starts only when one finishes.
    for _ in 0..10 {
        gate.release();
    }
    ticket.await;
    assert_eq!(peak.load(Ordering::SeqCst), 8);
    let ids: Vec<_> = results(&agent.session().events())
        .iter()
        .map(|r| r["call_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"]
    );
    validate_log(&agent.session().events());
    handle.dispose().await;
}

#[tokio::test(start_paused = true)]
async fn on_cancel_a_stubborn_body_is_aborted_after_the_grace_and_unstarted_calls_never_run() {
    let model = ScriptedModel::new(vec![vec![
        Act::Call("p1", "polite", "{}"),
        Act::Call("p2", "stubborn", "{}"),
        Act::Call("x3", "echo", "{}"),
        Act::Finish(FinishReason::ToolCalls),
    ]]);
    let h = Harness::new(model.clone()).await;
    let (polite_gate, stubborn_gate) = (Gate::default(), Gate::default());
    let mut polite = Probe::new("polite");
    polite.parallel = true;
    polite.gate = Some(polite_gate.clone());
    let mut stubborn = Probe::new("stubborn");
    stubborn.parallel = true;
    stubborn.stubborn = true;
    stubborn.gate = Some(stubborn_gate.clone());
    h.add_tool(polite);
    h.add_tool(stubborn);
    h.add_tool(Probe::new("echo"));
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("go")).unwrap();
    polite_gate.entered().await;
    stubborn_gate.entered().await;
    let begun = tokio::time::Instant::now();
    assert!(agent.cancel(CancelCause::User));
    assert_eq!(
        ticket.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Aborted {
                cause: CancelCause::User
            }
        }
    );
    assert!(
        begun.elapsed() >= Duration::from_secs(2),
        "the grace was given"
    );
    let events = agent.session().events();
    validate_log(&events);
    let found: Vec<_> = results(&events)
        .iter()
        .map(|r| {
            (
                r["call_id"].as_str().unwrap().to_owned(),
                r["error_code"].as_str().unwrap_or("ok").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("p1".to_owned(), "ok".to_owned()),
            ("p2".to_owned(), "tool_outcome_unknown".to_owned()),
            ("x3".to_owned(), "tool_not_started".to_owned())
        ]
    );
    assert_eq!(results(&events)[0]["content"], "stopped on cancel");
    assert!(
        results(&events)[2].get("call_seq").is_none(),
        "no tool/call for x3"
    );
    handle.dispose().await;
}

struct Scripted(std::sync::Mutex<Vec<ApprovalDecision>>);

#[async_trait::async_trait]
impl ApprovalGate for Scripted {
    fn mode(&self) -> dsh_tools::PermissionMode {
        dsh_tools::PermissionMode::Ask
    }

    async fn decide(&self, _request: ApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().remove(0)
    }
}

#[tokio::test]
async fn the_approval_gate_allows_rejects_or_withdraws_calls() {
    let model = ScriptedModel::new(vec![vec![
        Act::Call("a", "guarded", r#"{"n":1}"#),
        Act::Call("b", "guarded", r#"{"n":2}"#),
        Act::Call("c", "guarded", r#"{"n":3}"#),
        Act::Finish(FinishReason::ToolCalls),
    ]]);
    let h = Harness::new(model.clone()).await;
    let mut guarded = Probe::new("guarded");
    guarded.approval = true;
    guarded.parallel = true;
    let seen = guarded.seen.clone();
    h.add_tool(guarded);
    let gate = Arc::new(Scripted(std::sync::Mutex::new(vec![
        ApprovalDecision::Allow,
        ApprovalDecision::Reject {
            reason: "no".into(),
        },
        ApprovalDecision::Cancelled,
    ])));
    let handle = h
        .registry()
        .create(
            CreateAgent::new(h.owner())
                .with_cwd("/work")
                .with_approval(gate),
        )
        .await
        .unwrap();
    let agent = handle.agent().clone();
    agent.send(user("go")).unwrap().await;
    let events = agent.session().events();
    validate_log(&events);
    let r = results(&events);
    assert_eq!(r[0]["is_error"], false);
    assert_eq!(r[1]["error_code"], "tool_rejected");
    assert!(r[1]["content"].as_str().unwrap().contains("no"));
    assert_eq!(r[2]["error_code"], "tool_not_started");
    assert_eq!(seen.lock().unwrap().len(), 1, "only the allowed body ran");
    handle.dispose().await;
}

#[tokio::test]
async fn an_always_answer_allows_what_its_rule_covers_and_a_rule_that_is_none_records_nothing() {
    let model = ScriptedModel::new(vec![
        call("a", "guarded", r#"{"n":1}"#),
        call("b", "guarded", r#"{"n":2}"#),
        say("done"),
        call("c", "guarded", r#"{"n":3}"#),
        call("d", "guarded", r#"{"n":4}"#),
        say("done"),
    ]);
    let h = Harness::new(model.clone()).await;
    let mut guarded = Probe::new("guarded");
    guarded.approval = true;
    let seen = guarded.seen.clone();
    h.add_tool(guarded);
    let run = |decisions: Vec<ApprovalDecision>| {
        let gate = Arc::new(Scripted(std::sync::Mutex::new(decisions)));
        let registry = h.registry();
        let owner = h.owner();
        async move {
            let handle = registry
                .create(
                    CreateAgent::new(owner)
                        .with_cwd("/work")
                        .with_approval(gate.clone()),
                )
                .await
                .unwrap();
            handle.agent().send(user("go")).unwrap().await;
            let events = handle.agent().session().events();
            handle.dispose().await;
            (events, gate.0.lock().unwrap().len())
        }
    };
    // Asked once: "always" covers the second call, and the log says what was granted.
    let (events, unused) = run(vec![ApprovalDecision::AllowAlways {
        rule: "guarded".into(),
    }])
    .await;
    assert_eq!(unused, 0);
    let granted: Vec<_> = events
        .iter()
        .filter(|e| e.kind.as_str() == "permission/rule")
        .collect();
    assert_eq!(granted.len(), 1);
    assert!(granted[0].data.get().contains(r#""rule":"guarded""#));
    assert_eq!(seen.lock().unwrap().len(), 2);
    // An "always" whose rule is no rule allows its call alone, and records nothing.
    let (events, unused) = run(vec![
        ApprovalDecision::AllowAlways {
            rule: "guarded(".into(),
        },
        ApprovalDecision::Allow,
    ])
    .await;
    assert_eq!(unused, 0, "the second call was asked again");
    assert!(!events.iter().any(|e| e.kind.as_str() == "permission/rule"));
    assert_eq!(seen.lock().unwrap().len(), 4);
}
