//! An editor's MCP servers, sent with `session/new` as Zed sends its context servers: the
//! reference server over stdio and over streamable HTTP, its tools offered to that session
//! alone and called; SSE refused; closing the session leaves no server process behind; a
//! `session/load` in a new process starts the servers it sends for the loaded session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{ReferenceHttp, Sandbox, mcp_reference_server, wait_gone};
use serde_json::{Value, json};

fn echoing(sandbox: &Sandbox, tool: &str) -> String {
    sandbox.script(
        "mcp",
        json!([
            {"stream": [{"tool_call": {"name": tool,
                "arguments": {"message": "from the editor's server"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"},
            {"stream": [{"text": "plain"}], "finish": "stop"}
        ]),
    )
}

/// The session's first call is shown as its agent knows the tool: titled with the server's
/// name and of kind `read`, as the reference server marks `echo` read-only.
fn shown_as_the_session_knows_it(updates: &[Value], server: &str) {
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    let title = call["title"].as_str().unwrap();
    assert!(title.starts_with(&format!("{server}: ")), "{call}");
    assert_eq!(call["kind"], "read", "{call}");
}

fn new_session(acp: &mut AcpDriver, sandbox: &Sandbox, servers: Value) -> Value {
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": servers}),
    );
    acp.response(&id).0
}

#[test]
fn a_stdio_server_s_tools_belong_to_its_session_and_go_with_it() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let sandbox = Sandbox::new();
    let marker = format!("DSH_MCP_ACP={}", sandbox.root.path().display());
    let log = sandbox.root.path().join("calls.jsonl");
    let mut command = sandbox.dsh([
        "--replay",
        &echoing(&sandbox, "everything__echo"),
        "acp",
        "--permission",
        "allow",
    ]);
    command.env("DSH_REPLAY_LOG", &log);
    let mut acp = AcpDriver::spawn(command);
    let init = acp.initialize(false);
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": false})
    );
    let (name, value) = marker.split_once('=').unwrap();
    let created = new_session(
        &mut acp,
        &sandbox,
        json!([{"name": "everything", "command": "node", "args": [script],
                "env": [{"name": name, "value": value}]}]),
    );
    let with_server = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let plain = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&with_server, "use the tool");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let results: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .map(Value::to_string)
        .collect();
    assert!(results.contains("from the editor's server"), "{results}");
    shown_as_the_session_knows_it(&updates, "everything");
    acp.prompt_to_end(&plain, "no tools of the editor here");

    let calls: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let offered = |call: &Value| {
        call["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("everything__echo"))
    };
    assert!(
        offered(&calls[0]),
        "the session with the server: {}",
        calls[0]
    );
    assert!(!offered(&calls[2]), "the other session: {}", calls[2]);

    // Closing the session ends its server (and everything the server started).
    let id = acp.request("session/close", json!({"sessionId": with_server}));
    acp.response(&id);
    wait_gone(&marker);
    acp.finish();
}

#[test]
fn a_streamable_http_server_works_and_sse_is_refused() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let sandbox = Sandbox::new();
    let server = ReferenceHttp::start(&script);
    let mut acp = AcpDriver::start(
        &sandbox,
        &echoing(&sandbox, "web__echo"),
        &["--permission", "allow"],
    );
    acp.initialize(false);
    let refused = new_session(
        &mut acp,
        &sandbox,
        json!([{"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}]),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("streamable HTTP"),
        "{refused}"
    );
    let created = new_session(
        &mut acp,
        &sandbox,
        json!([{"type": "http", "name": "web", "url": server.url,
                "headers": []}]),
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let (response, updates) = acp.prompt_to_end(&session, "use the tool");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let results: String = updates.iter().map(Value::to_string).collect();
    assert!(results.contains("from the editor's server"), "{results}");
    shown_as_the_session_knows_it(&updates, "web");
    acp.finish();
    drop(server);
}

#[test]
fn a_loaded_session_gets_the_servers_its_load_sends() {
    let sandbox = Sandbox::new();
    let server = env!("CARGO_BIN_EXE_mcp-fault-server");
    let marker = format!("DSH_MCP_LOAD={}", sandbox.root.path().display());
    let (key, value) = marker.split_once('=').unwrap();
    let servers = json!([{"name": "faults", "command": server, "args": [],
                          "env": [{"name": key, "value": value}]}]);
    let script = sandbox.script(
        "load",
        json!([
            {"match": {"last_user_contains": "first"}, "stream": [{"text": "one"}],
             "finish": "stop"},
            {"match": {"last_user_contains": "second"},
             "stream": [{"tool_call": {"name": "faults__echo",
                 "arguments": {"text": "after the load"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    // A first editor process creates the session without servers and goes.
    let mut first = AcpDriver::start(&sandbox, &script, &["--permission", "allow"]);
    first.initialize(false);
    let session = first.new_session(&sandbox.work());
    first.prompt_to_end(&session, "first");
    first.finish();

    // A second one loads it with a server: its tools are the loaded session's.
    let mut second = AcpDriver::start(&sandbox, &script, &["--permission", "allow"]);
    second.initialize(false);
    let id = second.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": servers}),
    );
    let (loaded, _) = second.response(&id);
    assert!(loaded.get("result").is_some(), "{loaded}");
    let (response, updates) = second.prompt_to_end(&session, "second");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let shown: String = updates.iter().map(Value::to_string).collect();
    assert!(shown.contains("after the load"), "{shown}");
    assert!(shown.contains("faults: echo"), "{shown}");
    let close = second.request("session/close", json!({"sessionId": session}));
    second.response(&close);
    wait_gone(&marker);
    second.finish();
}
