//! `session/cancel` and `$/cancel_request` against the built `dsh acp`: answered
//! `cancelled` only once the turn has stopped, with its tools' processes gone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use serde_json::json;

#[test]
fn a_cancel_with_no_prompt_open_does_nothing() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "fine"}], "finish": "stop"}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.notify("session/cancel", json!({"sessionId": session}));
    acp.notify("session/cancel", json!({"sessionId": "ghost"}));
    acp.notify("session/cancel", json!({"nonsense": true}));
    let (response, updates) = acp.prompt_to_end(&session, "hi");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    // The pickers may be sent again when the model list comes after the session's answer
    // (a loaded machine): that is no effect of the cancels.
    let answered: Vec<_> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] != "config_option_update")
        .collect();
    assert_eq!(answered.len(), 1, "{updates:?}");
    assert_eq!(answered[0]["sessionUpdate"], "agent_message_chunk");
    acp.finish();
}

#[test]
fn a_cancel_in_the_same_write_as_its_prompt_means_the_model_is_never_called() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "answer"}], "finish": "stop"}]),
    );
    let (mut acp, log) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = json!({"jsonrpc": "2.0", "id": "A", "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "first words"}]}});
    let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel",
        "params": {"sessionId": session}});
    acp.write_raw(format!("{prompt}\n{cancel}\n").as_bytes());
    let (response, updates) = acp.response(&json!("A"));
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(updates.is_empty(), "{updates:?}");
    assert!(!log.exists() || std::fs::read_to_string(&log).unwrap().is_empty());
    let (response, _) = acp.prompt_to_end(&session, "second words");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("second words"), "{calls}");
    assert!(!calls.contains("first words"), "{calls}");
    acp.finish();
}

#[test]
fn a_cancelled_stream_sends_nothing_after_its_response() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "A"}, "stream": [{"text": "partial"}], "hang": true},
            {"stream": [{"text": "next"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let a = acp.prompt(&session, "A");
    acp.until_text("partial");
    acp.notify("session/cancel", json!({"sessionId": session}));
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, _) = acp.response(&a);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let (response, updates) = acp.prompt_to_end(&session, "again");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let texts: Vec<_> = updates
        .iter()
        .map(|u| u["content"]["text"].clone())
        .collect();
    assert_eq!(texts, vec![json!("next")]);
    acp.notify("session/cancel", json!({"sessionId": session}));
    acp.finish();
}

#[tokio::test]
async fn cancelling_a_running_command_fails_its_card_before_the_response_and_kills_it() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command":
                format!("touch started; sleep 1000.{m}; touch finished")}}}]},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "touch skipped"}}}]},
            {"stream": [{"text": "never"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    acp.until_update("tool_call");
    eventually("the command runs", || sleepers(&m) == 1).await;
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, before) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let last = before.last().unwrap();
    assert_eq!(last["params"]["update"]["status"], "failed", "{before:?}");
    all_gone(&m).await;
    assert!(!sandbox.work().join("finished").exists());
    assert!(!sandbox.work().join("skipped").exists());
    acp.finish();
}

#[test]
fn cancel_request_with_the_prompt_s_id_cancels_it_and_other_ids_do_nothing() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "partial"}], "hang": true}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    acp.until_text("partial");
    acp.notify("$/cancel_request", json!({"requestId": 999}));
    acp.notify("$/cancel_request", json!({"requestId": prompt.to_string()}));
    acp.notify("$/cancel_request", json!({"requestId": prompt}));
    let (response, _) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    acp.finish();
}

#[test]
fn a_stream_that_ignores_cancellation_is_answered_without_waiting_for_it() {
    // The stall and the cancel backstop are both ten minutes, far past the driver's hang
    // detector: a `cancelled` that arrives at all came from the loop dropping the stream.
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("acp.toml");
    std::fs::write(&config, "[acp]\ncancel_grace_ms = 600000\n").unwrap();
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "A"}, "stream": [{"text": "partial"}],
             "stall_ms": 600_000, "finish": "stop"},
            {"stream": [{"text": "next"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::spawn(sandbox.dsh([
        "--config",
        config.to_str().unwrap(),
        "--replay",
        &script,
        "acp",
        "--permission",
        "allow",
    ]));
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let a = acp.prompt(&session, "A");
    acp.until_text("partial");
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, _) = acp.response(&a);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let (response, updates) = acp.prompt_to_end(&session, "again");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(updates.len(), 1, "{updates:?}");
    acp.finish();
}
