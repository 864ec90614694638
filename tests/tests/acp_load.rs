//! `session/load` against the built `dsh acp`: a stored session replays its whole history,
//! tool calls included, across processes and after a crash, and continues.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::{AcpDriver, is_usage, update_kinds};
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use serde_json::{Value, json};

fn load(acp: &mut AcpDriver, session: &str, cwd: &Value) -> (Value, Vec<Value>) {
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    let (response, before) = acp.response(&id);
    let updates = before
        .into_iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .filter(|u| !is_usage(u))
        .collect();
    (response, updates)
}

fn history_script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "hello"},
             "stream": [{"reasoning": "r1"}, {"text": "t"}, {"text": "1"}], "finish": "stop"},
            {"match": {"last_user_contains": "run echo X"},
             "stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo X"}}}]},
            {"match": {"last_user_contains": "run echo X"},
             "stream": [{"text": "done"}], "finish": "stop"},
            {"match": {"last_user_contains": "later"}, "stream": [{"text": "later"}],
             "finish": "stop"}
        ]),
    )
}

/// A session stored by a first `dsh acp` process that sent `prompts` and exited; its id.
fn stored_session(sandbox: &Sandbox, script: &str, prompts: &[&str]) -> String {
    let mut first = AcpDriver::allowing(sandbox, script);
    first.initialize(false);
    let session = first.new_session(&sandbox.work());
    for prompt in prompts {
        first.prompt_to_end(&session, prompt);
    }
    first.finish();
    session
}

#[test]
fn a_loaded_session_replays_its_history_and_continues_in_a_new_process() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let session = stored_session(&sandbox, &script, &["hello 你好 🌍", "run echo X"]);

    let (mut second, log) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    second.initialize(false);
    let (response, updates) = load(&mut second, &session, &json!(sandbox.work()));
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    let shape: Vec<(String, Value)> = updates
        .iter()
        .map(|u| {
            let kind = u["sessionUpdate"].as_str().unwrap().to_owned();
            let detail = match kind.as_str() {
                "tool_call" => u["title"].clone(),
                "tool_call_update" => u["status"].clone(),
                _ => u["content"]["text"].clone(),
            };
            (kind, detail)
        })
        .collect();
    let want: Vec<(String, Value)> = [
        ("user_message_chunk", json!("hello 你好 🌍")),
        ("agent_thought_chunk", json!("r1")),
        ("agent_message_chunk", json!("t1")),
        ("user_message_chunk", json!("run echo X")),
        ("tool_call", json!("echo X")),
        ("tool_call_update", json!("completed")),
        ("agent_message_chunk", json!("done")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(shape, want);
    assert_eq!(
        updates[4]["status"], "in_progress",
        "replayed calls are shown running"
    );
    let output = updates[5]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(output.contains("X"), "{output}");
    let (response, _) = second.prompt_to_end(&session, "later");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let calls = std::fs::read_to_string(&log).unwrap();
    let call: Value = serde_json::from_str(calls.lines().last().unwrap()).unwrap();
    assert!(
        call["messages"].as_u64().unwrap() >= 6,
        "the model sees the history: {call}"
    );
    second.finish();

    let mut third = AcpDriver::allowing(&sandbox, &script);
    third.initialize(true);
    let (_, updates) = load(&mut third, &session, &json!(sandbox.work()));
    let card = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(card["content"][0]["type"], "terminal", "{card}");
    third.finish();
}

#[test]
fn loads_of_unknown_or_unparseable_ids_are_not_found_and_create_nothing() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    for id in ["01a20000-0000-7000-8000-000000000000", "../../etc"] {
        let (response, updates) = load(&mut acp, id, &json!(sandbox.work()));
        assert_eq!(response["error"]["code"], -32002, "{id}: {response}");
        assert_eq!(response["error"]["data"]["sessionId"], id);
        assert!(updates.is_empty());
    }
    acp.new_session(&sandbox.work());
    acp.finish();
}

#[test]
fn a_load_from_another_directory_is_refused_and_a_trailing_dot_is_the_same_directory() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let session = stored_session(&sandbox, &script, &["hello"]);

    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let (response, _) = load(&mut acp, &session, &json!("relative"));
    assert_eq!(response["error"]["code"], -32602);
    let (response, _) = load(&mut acp, &session, &json!("/tmp"));
    assert_eq!(response["error"]["code"], -32602);
    assert_eq!(response["error"]["data"]["requestCwd"], "/tmp");
    assert_eq!(
        response["error"]["data"]["sessionCwd"],
        json!(sandbox.work())
    );
    let id = acp.prompt(&session, "hi");
    let (response, _) = acp.response(&id);
    assert_eq!(
        response["error"]["code"], -32002,
        "a refused load loads nothing"
    );
    let dotted = format!("{}/.", sandbox.work().display());
    let (response, _) = load(&mut acp, &session, &json!(dotted));
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    acp.finish();
}

#[test]
fn a_live_session_cannot_be_loaded_twice_and_pipelined_frames_wait_for_the_load() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let mut first = AcpDriver::allowing(&sandbox, &script);
    first.initialize(false);
    let session = first.new_session(&sandbox.work());
    first.prompt_to_end(&session, "hello");
    let (response, _) = load(&mut first, &session, &json!(sandbox.work()));
    assert_eq!(
        response["error"]["code"], -32602,
        "already live here: {response}"
    );
    first.finish();

    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let params = json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []});
    let frames = [
        json!({"jsonrpc": "2.0", "id": "L1", "method": "session/load", "params": params}),
        json!({"jsonrpc": "2.0", "id": "L2", "method": "session/load", "params": params}),
        json!({"jsonrpc": "2.0", "id": "P", "method": "session/prompt", "params":
            {"sessionId": session, "prompt": [{"type": "text", "text": "later"}]}}),
    ];
    let write: String = frames.iter().map(|f| format!("{f}\n")).collect();
    acp.write_raw(write.as_bytes());
    let mut order = Vec::new();
    let mut replayed_prompts = 0;
    while order.len() < 3 {
        let frame = acp.next_frame().unwrap();
        if frame["params"]["update"]["sessionUpdate"] == "user_message_chunk" {
            replayed_prompts += 1;
        }
        if frame.get("method").is_none() {
            order.push((frame["id"].clone(), frame.get("error").is_some()));
        }
    }
    assert_eq!(replayed_prompts, 1, "replayed once");
    let loads: Vec<_> = order.iter().filter(|(id, _)| id != "P").collect();
    assert_eq!(
        loads.iter().filter(|(_, failed)| !failed).count(),
        1,
        "{order:?}"
    );
    let load_ok = order
        .iter()
        .position(|(id, failed)| id != "P" && !failed)
        .unwrap();
    let prompt = order.iter().position(|(id, _)| id == "P").unwrap();
    assert!(load_ok < prompt, "the prompt waits for the load: {order:?}");
    acp.finish();
}

#[test]
fn a_prompt_waiting_for_its_load_is_cancelled_by_its_request_id_and_never_reaches_the_model() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let session = stored_session(&sandbox, &script, &["hello"]);
    let (mut acp, calls) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    acp.initialize(false);
    let params = json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []});
    let frames = [
        json!({"jsonrpc": "2.0", "id": "L", "method": "session/load", "params": params}),
        json!({"jsonrpc": "2.0", "id": "P", "method": "session/prompt", "params":
            {"sessionId": session, "prompt": [{"type": "text", "text": "later"}]}}),
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "P"}}),
    ];
    let write: String = frames.iter().map(|f| format!("{f}\n")).collect();
    acp.write_raw(write.as_bytes());
    let (loaded, _) = acp.response(&json!("L"));
    assert!(loaded.get("result").is_some(), "{loaded}");
    let (prompt, updates) = acp.response(&json!("P"));
    assert_eq!(prompt["result"]["stopReason"], "cancelled", "{prompt}");
    assert!(updates.is_empty(), "nothing of the prompt ran: {updates:?}");
    let (next, _) = acp.prompt_to_end(&session, "later, again");
    assert_eq!(next["result"]["stopReason"], "end_turn");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(
        log.lines().count(),
        1,
        "only the second prompt called the model: {log}"
    );
    acp.finish();
}

#[tokio::test]
async fn after_a_sigkill_mid_command_no_tool_survives_and_the_loaded_call_is_shown_failed() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "go"}, "stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": format!("setsid sleep 1000.{m} & sleep 1000.{m}")}}}]},
            {"stream": [{"text": "after"}], "finish": "stop"}
        ]),
    );
    let mut first = AcpDriver::allowing(&sandbox, &script);
    first.initialize(false);
    let session = first.new_session(&sandbox.work());
    first.prompt(&session, "go");
    first.until_update("tool_call");
    eventually("the command and its setsid child run", || sleepers(&m) == 2).await;
    first.signal("KILL");
    let _ = first.wait_exit();
    // No shutdown ran: dsh's watchdog ends the command and the child that left its session.
    all_gone(&m).await;

    let mut second = AcpDriver::allowing(&sandbox, &script);
    second.initialize(false);
    let (response, updates) = load(&mut second, &session, &json!(sandbox.work()));
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    let call = updates
        .iter()
        .position(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(updates[call + 1]["sessionUpdate"], "tool_call_update");
    assert_eq!(updates[call + 1]["status"], "failed");
    let (response, _) = second.prompt_to_end(&session, "again");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    second.finish();
}

#[test]
fn a_load_written_as_the_input_closes_ends_cleanly_and_the_session_loads_again() {
    let sandbox = Sandbox::new();
    let script = history_script(&sandbox);
    let session = stored_session(&sandbox, &script, &["hello", "run echo X"]);

    let mut racing = AcpDriver::allowing(&sandbox, &script);
    racing.initialize(false);
    racing.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    // `finish` closes stdin at once, and asserts exit 0, no agent and no live session left,
    // and that the load was answered one way or the other.
    racing.finish();

    let mut again = AcpDriver::allowing(&sandbox, &script);
    again.initialize(false);
    let (response, updates) = load(&mut again, &session, &json!(sandbox.work()));
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert_eq!(
        update_kinds(&updates),
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "the whole history, nothing lost to the race"
    );
    again.finish();
}
