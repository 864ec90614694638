//! Capability honesty: dsh uses only what it advertised and what the client advertised. A
//! client offering file system, terminal and other opt-in capabilities still gets only
//! permission questions from dsh, and terminal cards only follow Zed's flag.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use serde_json::{Value, json};

fn echo_script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo OK"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo OK"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

/// The first `tool_call` of a finished prompt.
fn first_call(updates: &[Value]) -> Value {
    updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .cloned()
        .unwrap_or_else(|| panic!("no tool call in {updates:?}"))
}

fn zed_initialize(acp: &mut AcpDriver) -> Value {
    let id = acp.request(
        "initialize",
        json!({
            "protocolVersion": 1,
            "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200.0"},
            "clientCapabilities": {
                "fs": {"readTextFile": true, "writeTextFile": true},
                "terminal": true,
                "_meta": {"terminal_output": true, "terminal-auth": true}
            }
        }),
    );
    let (response, _) = acp.response(&id);
    response["result"].clone()
}

fn mcp_server() -> Value {
    json!([{"name": "context", "command": "/usr/bin/env", "args": ["true"],
            "env": [{"name": "TOKEN", "value": "not-logged"}]}])
}

#[test]
fn a_zed_shaped_client_gets_terminal_cards_and_no_request_but_permission_questions() {
    let sandbox = Sandbox::new();
    let script = echo_script(&sandbox);
    let mut acp = AcpDriver::start(&sandbox, &script, &[]);
    let result = zed_initialize(&mut acp);
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentCapabilities"]["loadSession"], true);
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": mcp_server()}),
    );
    let (created, _) = acp.response(&id);
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let call = first_call(&updates);
    assert_eq!(call["content"][0]["type"], "terminal", "{call}");
    // The invariants checked by `finish` refuse any request but permission questions (the
    // client offered fs and terminal methods), and any update variant dsh did not announce.
    let methods: Vec<&str> = acp
        .transcript
        .iter()
        .filter(|f| f.get("id").is_some() && f.get("method").is_some())
        .map(|f| f["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["session/request_permission"]);
    let (_, stderr) = acp.finish();
    assert!(!stderr.contains("not-logged"), "{stderr}");

    let mut again = AcpDriver::start(&sandbox, &script, &[]);
    zed_initialize(&mut again);
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": mcp_server()}),
    );
    let (loaded, before) = again.response(&id);
    assert!(loaded["result"]["configOptions"].is_array(), "{loaded}");
    let replayed: Vec<Value> = before
        .iter()
        .map(|f| f["params"]["update"].clone())
        .collect();
    assert_eq!(first_call(&replayed)["content"][0]["type"], "terminal");
    again.finish();
}

#[test]
fn without_the_terminal_flag_no_terminal_key_appears_even_with_every_capability_offered() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::allowing(&sandbox, &echo_script(&sandbox));
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": true, "writeTextFile": true},
            "terminal": true,
            "elicitation": {},
            "_meta": {"plans": true}
        }}),
    );
    acp.response(&id);
    let session = acp.new_session(&sandbox.work());
    let (_, updates) = acp.prompt_to_end(&session, "go");
    let call = first_call(&updates);
    assert_eq!(call["content"], Value::Null, "{call}");
    assert!(
        acp.transcript
            .iter()
            .all(|f| !f.to_string().contains("terminal_"))
    );
    acp.finish();
}

#[test]
fn a_second_initialize_turning_cards_on_applies_to_sessions_created_after_it() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::allowing(&sandbox, &echo_script(&sandbox));
    let first = acp.initialize(false);
    let before = acp.new_session(&sandbox.work());
    assert_eq!(
        acp.initialize(true),
        first,
        "the same answer the second time"
    );
    let after = acp.new_session(&sandbox.work());
    let (_, updates) = acp.prompt_to_end(&before, "go");
    let call = first_call(&updates);
    assert!(
        call.get("_meta").is_none(),
        "text for the older session: {call}"
    );
    let (_, updates) = acp.prompt_to_end(&after, "go");
    assert_eq!(first_call(&updates)["content"][0]["type"], "terminal");
    acp.finish();
}
