//! Playing entries.

use std::time::Duration;

use dsh_llm::{
    CancellationToken, FinishReason, Message, Model, ModelErrorKind, ModelEvent, ModelParams,
    ModelRequest, StreamChecker, ToolCall,
};
use dsh_llm_replay::{ReplayModel, ReplayScript};
use futures::StreamExt;

fn model(json: &str) -> ReplayModel {
    ReplayModel::new(ReplayScript::from_json_str(json, "t.json").unwrap())
}

fn request(session: &str, user: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::User {
            content: user.into(),
        }],
        tools: vec![],
        params: ModelParams::default(),
        session_id: Some(session.into()),
    }
}

async fn collect(
    model: &ReplayModel,
    req: ModelRequest,
) -> Vec<Result<ModelEvent, dsh_llm::ModelError>> {
    let stream = model.stream(req, CancellationToken::new()).await.unwrap();
    let items: Vec<_> = stream.collect().await;
    let mut checker = StreamChecker::new();
    for item in &items {
        checker.observe(item).unwrap();
    }
    checker.end().unwrap();
    items
}

#[tokio::test]
async fn stream_entries_emit_exact_events() {
    let m = model(
        r#"[ { "stream": [ { "reasoning": "r" }, { "text": ["a", "b"], "repeat": 2 },
                          { "tool_call": { "name": "bash", "arguments": { "command": "ls" } } } ],
              "usage": { "input_tokens": 3, "output_tokens": 4 } } ]"#,
    );
    let items = collect(&m, request("s", "hi")).await;
    let events: Vec<ModelEvent> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(events[0], ModelEvent::ReasoningDelta("r".into()));
    let texts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["a", "b", "a", "b"]);
    assert_eq!(
        events[5],
        ModelEvent::ToolCallStart {
            index: 0,
            id: "call_0_2".into(),
            name: "bash".into()
        }
    );
    assert_eq!(
        events[6],
        ModelEvent::ToolCallArgumentsDelta {
            index: 0,
            fragment: r#"{"command":"ls"}"#.into()
        }
    );
    assert!(
        matches!(&events[8], ModelEvent::Usage(u) if u.input_tokens == 3 && u.total_tokens == Some(7))
    );
    assert_eq!(
        events[9],
        ModelEvent::Finish {
            reason: FinishReason::ToolCalls
        }
    );
}

#[tokio::test]
async fn error_entries() {
    let m = model(
        r#"[ { "error": { "kind": "rate_limited", "message": "slow", "status": 429 } },
                       { "stream": [ { "text": "half" } ], "error": "broke" } ]"#,
    );
    let err = m
        .stream(request("s", "a"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(
        (err.kind, err.status),
        (ModelErrorKind::RateLimited, Some(429))
    );
    let items = collect(&m, request("s", "b")).await;
    assert_eq!(
        items[0].as_ref().unwrap(),
        &ModelEvent::TextDelta("half".into())
    );
    assert_eq!(items[1].as_ref().unwrap_err().kind, ModelErrorKind::Server);
}

#[tokio::test(start_paused = true)]
async fn hang_ends_at_cancel_and_delays_are_cancellable() {
    let m = model(
        r#"[ { "stream": [ { "text": "pre" } ], "hang": true },
                       { "stream": [ { "text": "slow", "delay_ms": 60000 } ] } ]"#,
    );
    let cancel = CancellationToken::new();
    let mut s = m.stream(request("s", "a"), cancel.clone()).await.unwrap();
    assert_eq!(
        s.next().await.unwrap().unwrap(),
        ModelEvent::TextDelta("pre".into())
    );
    let pending = tokio::time::timeout(Duration::from_secs(3600), s.next());
    cancel.cancel();
    let item = pending.await.expect("ends at once after cancel").unwrap();
    assert_eq!(item.unwrap_err().kind, ModelErrorKind::Cancelled);
    assert!(s.next().await.is_none());

    let cancel = CancellationToken::new();
    let mut s = m.stream(request("s", "b"), cancel.clone()).await.unwrap();
    let started = tokio::time::Instant::now();
    let next = s.next();
    cancel.cancel();
    assert_eq!(
        next.await.unwrap().unwrap_err().kind,
        ModelErrorKind::Cancelled
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "cancelled during the delay, not after it"
    );
}

#[tokio::test(start_paused = true)]
async fn hang_ignoring_abort_and_stall() {
    let m = model(r#"[ { "hang_ignoring_abort": true }, { "stall_ms": 1000 } ]"#);
    let cancel = CancellationToken::new();
    let mut s = m.stream(request("s", "a"), cancel.clone()).await.unwrap();
    cancel.cancel();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), s.next())
            .await
            .is_err(),
        "still pending after cancel"
    );
    drop(s);

    let cancel = CancellationToken::new();
    let mut s = m.stream(request("s", "b"), cancel.clone()).await.unwrap();
    cancel.cancel();
    let started = tokio::time::Instant::now();
    assert_eq!(
        s.next().await.unwrap().unwrap_err().kind,
        ModelErrorKind::Cancelled
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "the stall ignores the cancel until it ends"
    );
}

#[tokio::test]
async fn overrun_is_loud_and_bookkeeping_is_right() {
    let m = model(
        r#"[ { "stream": [ { "text": "one" } ] }, { "match": { "session_id": "other" }, "stream": [ { "text": "x" } ] } ]"#,
    );
    collect(&m, request("s", "first")).await;
    let err = m
        .stream(request("s", "second question"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::Protocol);
    assert!(
        err.message.contains(
            "replay script 't' exhausted: call #2 (session s, last user message 'second question')"
        ),
        "{err}"
    );
    assert_eq!(m.calls(), 2);
    assert_eq!(
        m.unused_entries(),
        [1],
        "entries remain, but none accepts the request"
    );
    assert!(
        m.requests().is_empty(),
        "requests are kept only when asked for"
    );
    let kept = model(r#"[ { "stream": [ { "text": "one" } ] } ]"#).with_recorded_requests();
    collect(&kept, request("s", "first")).await;
    let _ = kept
        .stream(request("s", "second"), CancellationToken::new())
        .await;
    assert_eq!(kept.requests().len(), 2);
    assert_eq!(kept.calls(), 2);
}

#[tokio::test]
async fn matchers_route_interleaved_sessions() {
    let m = model(
        r#"[ { "match": { "session_id": "a" }, "stream": [ { "text": "a1" } ] },
                       { "match": { "session_id": "b" }, "stream": [ { "text": "b1" } ] },
                       { "match": { "session_id": "a", "last_user_contains": "again" }, "stream": [ { "text": "a2" } ] } ]"#,
    );
    let first = |items: Vec<Result<ModelEvent, dsh_llm::ModelError>>| match &items[0] {
        Ok(ModelEvent::TextDelta(t)) => t.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(first(collect(&m, request("b", "x")).await), "b1");
    assert_eq!(first(collect(&m, request("a", "x")).await), "a1");
    assert_eq!(first(collect(&m, request("a", "again")).await), "a2");
}

#[tokio::test]
async fn invalid_requests_consume_nothing() {
    let m = model(r#"[ { "stream": [ { "text": "one" } ] } ]"#);
    let mut bad = request("s", "hi");
    bad.messages.push(Message::Assistant {
        content: String::new(),
        reasoning: None,
        tool_calls: vec![ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }],
    });
    let err = m.stream(bad, CancellationToken::new()).await.err().unwrap();
    assert_eq!(err.kind, ModelErrorKind::BadRequest);
    assert_eq!(m.unused_entries(), [0]);
}

#[tokio::test]
async fn call_log_and_ready_file() {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready.flag");
    let json = format!(
        r#"[ {{ "stream": [ {{ "text": "one" }} ], "ready_file": {} }}, {{ "stream": [ {{ "text": "two" }} ] }} ]"#,
        serde_json::to_string(&ready).unwrap()
    );
    let log = dir.path().join("calls.jsonl");
    let m =
        ReplayModel::new(ReplayScript::from_json_str(&json, "t.json").unwrap()).with_call_log(&log);
    let mut s = m
        .stream(request("s", "hello"), CancellationToken::new())
        .await
        .unwrap();
    assert!(!ready.exists());
    s.next().await.unwrap().unwrap();
    s.next().await.unwrap().unwrap();
    assert!(ready.exists(), "created once the prefix was emitted");
    collect(&m, request("s", "again")).await;
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["call"], 1);
    assert_eq!(lines[0]["entry"], 0);
    assert_eq!(lines[1]["last_user"], "again");
    assert_eq!(lines[1]["session_id"], "s");
    assert_eq!(lines[1]["messages"], 1);
}

#[tokio::test]
async fn the_demo_passes_the_checker() {
    let m = ReplayModel::new(ReplayScript::builtin("demo").unwrap());
    let mut req = request("s", "look");
    let steps = ReplayScript::builtin("demo").unwrap().entries.len();
    for _ in 0..steps {
        let items = collect(&m, req.clone()).await;
        let calls: Vec<ToolCall> = items
            .iter()
            .filter_map(|i| match i {
                Ok(ModelEvent::ToolCallEnd {
                    id,
                    name,
                    arguments,
                    ..
                }) => Some(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                }),
                _ => None,
            })
            .collect();
        req.messages.push(Message::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: calls.clone(),
        });
        for call in calls {
            req.messages.push(Message::Tool {
                call_id: call.id,
                content: "out".into(),
            });
        }
    }
    assert!(m.unused_entries().is_empty());
}
