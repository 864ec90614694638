//! Several sessions on one `dsh acp` connection: each has its own agent, cwd, turn,
//! cancellation, permission questions and background tasks, and nothing of one reaches
//! another.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use dsh_e2e::Sandbox;
use dsh_e2e::acp::started_task;
use dsh_e2e::acp::{AcpDriver, Policy};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use serde_json::{Value, json};

fn bash(arguments: Value) -> Value {
    json!({"tool_call": {"name": "bash", "arguments": arguments}})
}

/// Reads until every id in `ids` is answered; returns the responses by id and each
/// session's streamed text in arrival order.
fn until_answered(
    acp: &mut AcpDriver,
    ids: &[&Value],
) -> (HashMap<String, Value>, HashMap<String, String>) {
    let mut responses = HashMap::new();
    let mut texts: HashMap<String, String> = HashMap::new();
    while responses.len() < ids.len() {
        let frame = acp.next_frame().unwrap();
        if frame["method"] == "session/update" {
            let session = frame["params"]["sessionId"].as_str().unwrap().to_owned();
            let text = frame["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or("");
            texts.entry(session).or_default().push_str(text);
        } else if frame.get("method").is_none() && ids.contains(&&frame["id"]) {
            responses.insert(frame["id"].to_string(), frame);
        }
    }
    (responses, texts)
}

#[test]
fn sessions_stream_side_by_side_and_the_connection_keeps_serving_meanwhile() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "first A"}, "stream": [{"text": "A", "repeat": 300}],
             "hang": true},
            {"match": {"last_user_contains": "first B"}, "stream": [{"text": "B", "repeat": 300}],
             "hang": true},
            {"match": {"last_user_contains": "again A"}, "stream": [{"text": "a"}], "finish": "stop"},
            {"match": {"last_user_contains": "again B"}, "stream": [{"text": "b"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let a = acp.new_session(&sandbox.work());
    let b = acp.new_session(&sandbox.work());
    let prompt = |session: &str, id: &str, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    };
    let both = format!(
        "{}\n{}\n",
        prompt(&a, "PA", "first A"),
        prompt(&b, "PB", "first B")
    );
    acp.write_raw(both.as_bytes());
    let mut texts: HashMap<String, String> = HashMap::new();
    while texts.get(&a).map_or(0, String::len) < 300 || texts.get(&b).map_or(0, String::len) < 300 {
        let frame = acp.next_frame().unwrap();
        assert_eq!(frame["method"], "session/update", "{frame}");
        let session = frame["params"]["sessionId"].as_str().unwrap().to_owned();
        texts.entry(session).or_default().push_str(
            frame["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap(),
        );
    }
    assert_eq!(texts[&a], "A".repeat(300), "no cross-talk into A");
    assert_eq!(texts[&b], "B".repeat(300), "no cross-talk into B");
    // Both turns are still open: the connection serves a new session meanwhile.
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": []}),
    );
    let (created, before) = acp.response(&id);
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    assert!(before.is_empty(), "{before:?}");
    acp.notify("session/cancel", json!({"sessionId": a}));
    acp.notify("session/cancel", json!({"sessionId": b}));
    let (answers, _) = until_answered(&mut acp, &[&json!("PA"), &json!("PB")]);
    for answer in answers.values() {
        assert_eq!(answer["result"]["stopReason"], "cancelled");
    }
    let (response, updates) = acp.prompt_to_end(&a, "again A");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(
        updates,
        [json!({"sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "a"}})]
    );
    let (response, _) = acp.prompt_to_end(&b, "again B");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    acp.finish();
}

#[test]
fn cancelling_one_session_leaves_the_other_to_finish_its_turn() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "one"}, "stream": [{"text": "partial"}], "hang": true},
            {"match": {"last_user_contains": "two"}, "stream": [{"text": "second"}],
             "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let s1 = acp.new_session(&sandbox.work());
    let s2 = acp.new_session(&sandbox.work());
    let p1 = acp.prompt(&s1, "one");
    acp.until_text("partial");
    let p2 = acp.prompt(&s2, "two");
    acp.notify("session/cancel", json!({"sessionId": s1}));
    let (answers, texts) = until_answered(&mut acp, &[&p1, &p2]);
    assert_eq!(
        answers[&p1.to_string()]["result"]["stopReason"],
        "cancelled"
    );
    assert_eq!(answers[&p2.to_string()]["result"]["stopReason"], "end_turn");
    assert_eq!(texts[&s2], "second");
    assert!(!texts.contains_key(&s1), "{texts:?}");
    acp.finish();
}

#[test]
fn a_model_failure_in_one_session_leaves_the_other_streaming() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "steady"}, "stream": [{"text": "going"}], "hang": true},
            {"match": {"last_user_contains": "boom"}, "error": "boom from the model"},
            {"match": {"last_user_contains": "more"}, "stream": [{"text": "still here"}],
             "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let steady = acp.new_session(&sandbox.work());
    let failing = acp.new_session(&sandbox.work());
    let open = acp.prompt(&steady, "steady");
    acp.until_text("going");
    let (response, before) = acp.prompt_to_end(&failing, "boom");
    assert_eq!(response["error"]["code"], -32603, "{response}");
    assert!(before.is_empty(), "{before:?}");
    assert!(
        acp.answered(&open).is_none(),
        "the other turn is still running"
    );
    acp.notify("session/cancel", json!({"sessionId": steady}));
    let (response, _) = acp.response(&open);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let (response, updates) = acp.prompt_to_end(&steady, "more");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(updates[0]["content"]["text"], "still here");
    acp.finish();
}

#[test]
fn each_session_runs_its_commands_in_its_own_directory() {
    let sandbox = Sandbox::new();
    let (dir_a, dir_b) = (sandbox.work().join("a"), sandbox.work().join("b"));
    std::fs::create_dir_all(&dir_a).unwrap();
    std::fs::create_dir_all(&dir_b).unwrap();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "where A"}, "stream": [bash(json!({"command": "pwd"}))]},
            {"match": {"last_user_contains": "where A"}, "stream": [{"text": "ok"}], "finish": "stop"},
            {"match": {"last_user_contains": "where B"}, "stream": [bash(json!({"command": "pwd"}))]},
            {"match": {"last_user_contains": "where B"}, "stream": [{"text": "ok"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let a = acp.new_session(&dir_a);
    let b = acp.new_session(&dir_b);
    for (session, prompt, dir) in [(&a, "where A", &dir_a), (&b, "where B", &dir_b)] {
        let (response, updates) = acp.prompt_to_end(session, prompt);
        assert_eq!(response["result"]["stopReason"], "end_turn");
        let output = updates[1]["content"][0]["content"]["text"]
            .as_str()
            .unwrap();
        assert_eq!(output, format!("```console\n{}\n```", dir.display()));
    }
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cannot_read_or_kill_another_session_s_background_task() {
    let sandbox = Sandbox::new();
    let m = marker();
    let server = MockModelServer::start(vec![
        MockResponse::tool_call(
            "bash",
            &json!({"command": format!("sleep 1000.{m}"), "run_in_background": true}),
        ),
        MockResponse::text("started"),
    ])
    .await;
    let mut acp = AcpDriver::serving(
        &sandbox,
        &format!("{}/v1", server.base_url()),
        &["--permission", "allow"],
    );
    acp.initialize(false);
    let owner = acp.new_session(&sandbox.work());
    let other = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&owner, "start");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    eventually("the background task runs", || sleepers(&m) == 1).await;
    // The other session's model names the owner's task by its real id.
    let task = updates.iter().find_map(started_task).unwrap();
    for tool in ["bash_output", "bash_kill"] {
        server.push(MockResponse::tool_call(tool, &json!({"task_id": task})));
    }
    server.push(MockResponse::text("tried"));
    let (response, updates) = acp.prompt_to_end(&other, "steal");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let failed: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .collect();
    assert_eq!(failed.len(), 2, "{updates:?}");
    for update in failed {
        assert_eq!(update["status"], "failed", "{update}");
        let text = update["content"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("not found"), "{text}");
    }
    assert_eq!(sleepers(&m), 1, "the owner's task keeps running");
    acp.finish();
    all_gone(&m).await;
}

#[test]
fn answering_one_session_s_question_runs_only_that_session_s_call() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "make a"},
             "stream": [bash(json!({"command": "touch a"}))]},
            {"match": {"last_user_contains": "make a"}, "stream": [{"text": "a done"}],
             "finish": "stop"},
            {"match": {"last_user_contains": "make b"},
             "stream": [bash(json!({"command": "touch b"}))]},
            {"match": {"last_user_contains": "make b"}, "stream": [{"text": "b done"}],
             "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::start(&sandbox, &script, &[]);
    acp.policy = Policy::Hold;
    acp.initialize(false);
    let s1 = acp.new_session(&sandbox.work());
    let s2 = acp.new_session(&sandbox.work());
    let p1 = acp.prompt(&s1, "make a");
    let q1 = acp.until("S1's question", |f| {
        f["method"] == "session/request_permission" && f["params"]["sessionId"] == s1.as_str()
    });
    let p2 = acp.prompt(&s2, "make b");
    let q2 = acp.until("S2's question", |f| {
        f["method"] == "session/request_permission" && f["params"]["sessionId"] == s2.as_str()
    });
    let answer = |id: &Value, option: &str| {
        json!({"jsonrpc": "2.0", "id": id,
               "result": {"outcome": {"outcome": "selected", "optionId": option}}})
    };
    acp.send(&answer(&q2["id"], "allow_once"));
    let (response, _) = acp.response(&p2);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(sandbox.work().join("b").exists());
    assert!(!sandbox.work().join("a").exists(), "S1 is still asked");
    assert!(acp.answered(&p1).is_none());
    acp.send(&answer(&q1["id"], "reject_once"));
    let (response, before) = acp.response(&p1);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(
        before
            .iter()
            .any(|f| f["params"]["update"]["status"] == "failed"),
        "{before:?}"
    );
    assert!(!sandbox.work().join("a").exists());
    acp.finish();
}

/// The processes dsh started that are still its children (its watchdog among them).
fn children(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .map(|p| {
                    std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ")
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_watchdog_starts_with_the_first_command_not_before() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "later",
        json!([
            {"stream": [{"text": "just words"}], "finish": "stop"},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "true"}}}]},
            {"stream": [{"text": "ran it"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.prompt_to_end(&session, "talk");
    assert!(
        !children(acp.pid())
            .iter()
            .any(|c| c.contains("dsh-shell-watchdog")),
        "no command ran, so nothing is watched: {:?}",
        children(acp.pid())
    );
    acp.prompt_to_end(&session, "run it");
    let watching: Vec<String> = children(acp.pid())
        .into_iter()
        .filter(|c| c.contains("dsh-shell-watchdog"))
        .collect();
    assert_eq!(watching.len(), 1, "{:?}", children(acp.pid()));
    acp.finish();
}
