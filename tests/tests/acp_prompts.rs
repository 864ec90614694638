//! `dsh acp` sessions and prompts: creation rules, streamed text and reasoning, bash as text
//! and as terminal cards, prompt validation, and every way a turn can end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::{AcpDriver, started_task, update_kinds};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

fn bash(command: &str) -> Value {
    json!({"tool_call": {"name": "bash", "arguments": {"command": command}}})
}

fn texts(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn new_sessions_get_distinct_ids_and_bad_scopes_are_refused_creating_nothing() {
    let sandbox = Sandbox::new();
    let script = sandbox.script("s", json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let ids: std::collections::HashSet<String> =
        (0..3).map(|_| acp.new_session(&sandbox.work())).collect();
    assert_eq!(ids.len(), 3);
    for id in &ids {
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "7", "a UUID v7: {id}");
    }
    let cases = [
        (json!({"cwd": "relative/dir", "mcpServers": []}), "cwd"),
        (json!({"cwd": "/no/such/dir", "mcpServers": []}), "cwd"),
        (
            json!({"cwd": sandbox.work(), "mcpServers": [], "additionalDirectories": ["/tmp"]}),
            "additionalDirectories",
        ),
        (
            json!({"cwd": sandbox.work(), "mcpServers": [],
                   "systemPrompt": {"mode": "append", "content": []}}),
            "systemPrompt",
        ),
        (
            json!({"cwd": sandbox.work(), "mcpServers": [],
                   "systemPrompt": {"mode": "_replace_everything", "content": [{"type": "text", "text": "x"}]}}),
            "systemPrompt",
        ),
    ];
    for (params, field) in cases {
        let id = acp.request("session/new", params);
        let (response, _) = acp.response(&id);
        assert_eq!(response["error"]["code"], -32602, "{response}");
        assert_eq!(response["error"]["data"]["field"], field, "{response}");
    }
    let id = acp.request("session/new", json!({"cwd": sandbox.work()}));
    let (response, _) = acp.response(&id);
    assert_eq!(response["error"]["code"], -32602);
    assert!(
        response["error"]["data"]["detail"].is_string(),
        "{response}"
    );
    let id = acp.prompt("made-up", "hi");
    let (response, _) = acp.response(&id);
    assert_eq!(response["error"]["code"], -32002);
    assert_eq!(response["error"]["data"]["sessionId"], "made-up");
    acp.finish();
}

#[test]
fn mcp_servers_are_accepted_and_their_secrets_never_logged() {
    let sandbox = Sandbox::new();
    let script = sandbox.script("s", json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": [{"name": "ctx", "command": "/bin/false",
               "args": [], "env": [{"name": "TOKEN", "value": "s3cret"}]}]}),
    );
    let (response, _) = acp.response(&id);
    assert!(response["result"]["sessionId"].is_string(), "{response}");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0));
    assert!(stderr.contains("ctx"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[test]
fn text_and_reasoning_stream_in_script_order_and_the_prompt_is_not_echoed() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"reasoning": "think "}, {"text": "one "}, {"reasoning": "more"},
                           {"text": "two"}], "finish": "stop"}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "hi");
    assert_eq!(response["result"], json!({"stopReason": "end_turn"}));
    assert_eq!(
        update_kinds(&updates),
        [
            "agent_thought_chunk",
            "agent_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(texts(&updates, "agent_message_chunk"), "one two");
    assert!(
        !updates
            .iter()
            .any(|u| u["sessionUpdate"] == "user_message_chunk")
    );
    acp.finish();
}

#[test]
fn bash_in_text_mode_is_an_execute_card_with_its_output_in_a_console_fence() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"stream": [bash("echo OK")]},
            {"stream": [bash("printf '```\\n'; exit 3")]},
            {"stream": [{"text": "DONE"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let updates = without_progress(&updates);
    let call = &updates[0];
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert_eq!(call["title"], "echo OK");
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["status"], "in_progress");
    assert_eq!(call["rawInput"]["command"], "echo OK");
    let done = &updates[1];
    assert_eq!(done["sessionUpdate"], "tool_call_update");
    assert_eq!(done["toolCallId"], call["toolCallId"]);
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["content"]["text"], "```console\nOK\n```");
    assert!(
        done.get("_meta").is_none(),
        "no terminal keys without the flag"
    );
    let fenced = updates[3]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert_eq!(fenced, "````console\n```\n````\nexit code: 3");
    assert_eq!(
        updates[3]["status"], "completed",
        "a failing command is still completed"
    );
    assert_eq!(texts(&updates, "agent_message_chunk"), "DONE");
    acp.finish();
}

#[test]
fn bash_with_the_terminal_flag_is_a_terminal_card_that_finishes() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [bash("echo OK")]}, {"stream": [{"text": "DONE"}], "finish": "stop"}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let (_, updates) = acp.prompt_to_end(&session, "go");
    let call = &updates[0];
    let id = call["toolCallId"].as_str().unwrap();
    assert_eq!(
        call["content"],
        json!([{"type": "terminal", "terminalId": id}])
    );
    assert_eq!(
        call["_meta"]["terminal_info"],
        json!({"terminal_id": id, "cwd": sandbox.work()})
    );
    // The output reaches the card as it runs, once; the final update carries the exit.
    let data: String = updates
        .iter()
        .filter(|u| u["_meta"]["terminal_output"]["terminal_id"] == id)
        .map(|u| u["_meta"]["terminal_output"]["data"].as_str().unwrap())
        .collect();
    assert_eq!(data, "OK\n");
    let done = without_progress(&updates)[1].clone();
    assert!(done.get("content").is_none(), "{done}");
    assert_eq!(
        done["_meta"]["terminal_exit"],
        json!({"terminal_id": id, "exit_code": 0, "signal": null})
    );
    acp.finish();
}

#[test]
fn a_tool_failure_is_a_failed_card_and_the_turn_goes_on() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "pwd", "workdir": "/no/such/dir"}}}]},
            {"stream": [{"text": "ok"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(updates[1]["status"], "failed", "{updates:?}");
    assert!(
        updates[1]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("/no/such/dir")
    );
    acp.finish();
}

#[test]
fn prompts_are_validated_before_the_model_is_called() {
    let sandbox = Sandbox::new();
    let script = sandbox.script("s", json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    let (mut acp, log) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let refused = [
        (json!([]), None),
        (json!([{"type": "text", "text": "  \n"}]), None),
        (
            json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]),
            Some("image"),
        ),
        (
            json!([{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]),
            Some("audio"),
        ),
        (
            json!([{"type": "resource", "resource": {"uri": "file:///x.png", "blob": "AA=="}}]),
            Some("binary resource"),
        ),
    ];
    for (prompt, unsupported) in refused {
        let id = acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": prompt}),
        );
        let (response, _) = acp.response(&id);
        assert_eq!(response["error"]["code"], -32602, "{response}");
        if let Some(kind) = unsupported {
            assert_eq!(response["error"]["data"]["unsupported"], kind);
        }
    }
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "mystery"}]}),
    );
    let (response, _) = acp.response(&id);
    assert!(
        response["error"]["data"]["detail"].is_string(),
        "{response}"
    );
    assert!(!log.exists() || std::fs::read_to_string(&log).unwrap().is_empty());
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [
            {"type": "text", "text": "see"},
            {"type": "resource_link", "uri": "file:///x", "name": "x"}
        ]}),
    );
    let (response, _) = acp.response(&id);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains("see\\n[resource link: x file:///x]"),
        "{calls}"
    );
    acp.finish();
}

#[test]
fn each_turn_end_has_its_stop_reason_and_an_error_keeps_the_session_usable() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "boom"}, "stream": [{"text": "par"}],
             "error": "boom from the model"},
            {"match": {"last_user_contains": "long"}, "stream": [{"text": "cut"}], "finish": "length"},
            {"match": {"last_user_contains": "refuse"}, "finish": "refusal"},
            {"stream": [{"text": "fine"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, _) = acp.prompt_to_end(&session, "boom");
    assert_eq!(response["error"]["code"], -32603, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("boom"),
        "{response}"
    );
    let (response, _) = acp.prompt_to_end(&session, "long");
    assert_eq!(response["result"]["stopReason"], "max_tokens");
    let (response, _) = acp.prompt_to_end(&session, "refuse");
    assert_eq!(response["result"]["stopReason"], "refusal");
    let (response, updates) = acp.prompt_to_end(&session, "again");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(texts(&updates, "agent_message_chunk"), "fine");
    acp.finish();
}

#[test]
fn thousands_of_chunks_all_arrive_before_the_response() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "x", "repeat": 5000}], "finish": "stop"}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(texts(&updates, "agent_message_chunk"), "x".repeat(5000));
    acp.finish();
}

#[test]
fn two_sessions_stream_at_once_without_cross_talk() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "A"}, "stream": [{"text": "A", "repeat": 200}],
             "finish": "stop"},
            {"match": {"last_user_contains": "B"}, "stream": [{"text": "B", "repeat": 200}],
             "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let a = acp.new_session(&sandbox.work());
    let b = acp.new_session(&sandbox.work());
    let pa = acp.prompt(&a, "A");
    let pb = acp.prompt(&b, "B");
    let mut seen = std::collections::HashMap::<String, String>::new();
    let mut open = 2;
    while open > 0 {
        let frame = acp.next_frame().unwrap();
        if frame["method"] == "session/update" {
            let sid = frame["params"]["sessionId"].as_str().unwrap().to_owned();
            let text = frame["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or("");
            seen.entry(sid).or_default().push_str(text);
        } else if frame["id"] == pa || frame["id"] == pb {
            assert_eq!(frame["result"]["stopReason"], "end_turn");
            open -= 1;
        }
    }
    assert_eq!(seen[&a], "A".repeat(200));
    assert_eq!(seen[&b], "B".repeat(200));
    acp.finish();
}

#[test]
fn a_second_prompt_on_a_busy_session_is_refused_and_the_first_goes_on() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "A"}, "stream": [{"text": "partial"}], "hang": true},
            {"stream": [{"text": "C"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let a = acp.prompt(&session, "A");
    acp.until_text("partial");
    let b = acp.prompt(&session, "B");
    let (response, _) = acp.response(&b);
    assert_eq!(response["error"]["code"], -32602);
    assert_eq!(response["error"]["data"]["sessionId"], session.as_str());
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, _) = acp.response(&a);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let (response, _) = acp.prompt_to_end(&session, "C");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tasks_show_as_generic_cards_even_with_terminal_cards_on() {
    let sandbox = Sandbox::new();
    let server = MockModelServer::start(vec![MockResponse::tool_call(
        "bash",
        &json!({"command": "echo started; sleep 1000", "run_in_background": true}),
    )])
    .await;
    let mut acp = AcpDriver::serving(
        &sandbox,
        &format!("{}/v1", server.base_url()),
        &["--permission", "allow"],
    );
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let id = acp.prompt(&session, "go");
    // The task's id is known once it started (its card says so): the next answers name it.
    let started = acp.until("the task's id", |f| {
        started_task(&f["params"]["update"]).is_some()
    });
    let task = started_task(&started["params"]["update"]).unwrap();
    for tool in ["bash_output", "bash_kill"] {
        server.push(MockResponse::tool_call(tool, &json!({"task_id": task})));
    }
    server.push(MockResponse::text("stopped"));
    let (response, _) = acp.response(&id);
    let updates: Vec<Value> = acp
        .transcript
        .iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .collect();
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let calls: Vec<(&Value, &Value)> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .map(|u| (&u["title"], &u["kind"]))
        .collect();
    assert_eq!(
        calls,
        [
            (&json!("echo started; sleep 1000"), &json!("execute")),
            (
                &json!(format!("Read output of background task {task}")),
                &json!("read")
            ),
            (
                &json!(format!("Kill background task {task}")),
                &json!("execute")
            ),
        ]
    );
    for update in updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
    {
        assert_eq!(update["status"], "completed", "{update}");
        assert!(update.get("_meta").is_none(), "no terminal card: {update}");
        assert!(
            update["content"][0]["content"]["text"].is_string(),
            "{update}"
        );
    }
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    acp.finish();
}

#[test]
fn a_turn_past_the_step_limit_ends_max_turn_requests() {
    let sandbox = Sandbox::new();
    let call = bash("true");
    let script = sandbox.script(
        "s",
        json!([{"stream": [call]}, {"stream": [call]}, {"stream": [call]},
               {"stream": [{"text": "never"}], "finish": "stop"}]),
    );
    let mut command = sandbox.dsh(["--replay", &script, "acp", "--permission", "allow"]);
    command.env("DSH_MAX_STEPS", "2");
    let mut acp = AcpDriver::spawn(command);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "max_turn_requests");
    assert_eq!(texts(&updates, "agent_message_chunk"), "");
    acp.finish();
}

#[test]
fn a_one_mebibyte_prompt_is_accepted_at_the_default_line_limit() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "read it"}], "finish": "stop"}]),
    );
    let (mut acp, log) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let big = format!("{}END", "y".repeat(1 << 20));
    let (response, _) = acp.prompt_to_end(&session, &big);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(std::fs::read_to_string(&log).unwrap().contains("yyyyEND"));
    acp.finish();
}

/// The updates without a running call's output (a `tool_call_update` with no status).
fn without_progress(updates: &[Value]) -> Vec<Value> {
    updates
        .iter()
        .filter(|u| !(u["sessionUpdate"] == "tool_call_update" && u["status"].is_null()))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mentioned_file_reaches_the_model_as_a_fenced_block_and_the_log_keeps_its_uri() {
    use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
    let server = MockModelServer::start(vec![MockResponse::text("it defines a")]).await;
    let base = server.base_url();
    let (uri, log) = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let mut acp = AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let uri = format!("file://{}/a.rs", sandbox.work().display());
        // As Zed sends an @-mention: the text, then the file as an embedded resource.
        let id = acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "what does this do?"},
                {"type": "resource", "resource": {"uri": uri, "mimeType": "text/x-rust",
                    "text": "fn a() {}\n"}}
            ]}),
        );
        let (response, _) = acp.response(&id);
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
        acp.finish();
        let log = std::fs::read_to_string(sandbox.logs().pop().unwrap()).unwrap();
        (uri, log)
    })
    .await
    .unwrap();
    let request = server.requests()[0].json();
    let sent = dsh_e2e::first_user_text(&request);
    assert_eq!(
        sent,
        format!("what does this do?\n{uri}\n```\nfn a() {{}}\n```")
    );
    let recorded: serde_json::Value = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "user/message")
        .unwrap();
    assert_eq!(recorded["data"]["message"]["resources"], json!([uri]));
}
