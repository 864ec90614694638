//! How `dsh acp` ends: end of input, signals and a vanished client all run one teardown
//! that answers the open prompt, stops every tool, keeps the log loadable and exits 0.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use serde_json::json;

fn sleeping(sandbox: &Sandbox, m: &str) -> String {
    sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "go"}, "stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": format!("sleep 1000.{m}")}}}]},
            {"stream": [{"text": "after"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn closing_stdin_after_initialize_or_a_prompt_exits_0_with_nothing_left() {
    let sandbox = Sandbox::new();
    let script = sandbox.script("s", json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0));
    assert!(stderr.contains("agents=0 sessions=0"), "{stderr}");

    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.prompt_to_end(&session, "hi");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains("teardown complete reason=input-closed agents=0 sessions=0"),
        "{stderr}"
    );
}

#[tokio::test]
async fn closing_stdin_mid_command_ends_the_command_and_the_log_reloads_closed() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sleeping(&sandbox, &m);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.prompt(&session, "go");
    acp.until_update("tool_call");
    eventually("the command runs", || sleepers(&m) == 1).await;
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("agents=0 sessions=0"), "{stderr}");
    all_gone(&m).await;

    let mut again = AcpDriver::allowing(&sandbox, &script);
    again.initialize(false);
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, before) = again.response(&id);
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert!(
        before
            .iter()
            .any(|f| f["params"]["update"]["status"] == "failed")
    );
    again.finish();
}

#[tokio::test]
async fn each_signal_answers_the_open_prompt_cancelled_and_exits_0() {
    for signal in ["TERM", "HUP", "INT"] {
        let sandbox = Sandbox::new();
        let m = marker();
        let script = sleeping(&sandbox, &m);
        let mut acp = AcpDriver::allowing(&sandbox, &script);
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let prompt = acp.prompt(&session, "go");
        acp.until_update("tool_call");
        eventually("the command runs", || sleepers(&m) == 1).await;
        acp.signal(signal);
        let (response, _) = acp.response(&prompt);
        assert_eq!(response["result"]["stopReason"], "cancelled", "{signal}");
        let (code, stderr) = acp.wait_exit();
        assert_eq!(code, Some(0), "{signal}: {stderr}");
        assert!(stderr.contains(&format!("reason=SIG{signal}")), "{stderr}");
        all_gone(&m).await;
    }
}

#[test]
fn a_client_that_closes_its_end_of_stdout_is_left_without_a_panic() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "x", "repeat": 20000}], "finish": "stop"}]),
    );
    let mut child = sandbox
        .dsh(["--replay", &script, "acp", "--permission", "allow"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let send = |stdin: &mut std::process::ChildStdin, frame: serde_json::Value| {
        stdin.write_all(format!("{frame}\n").as_bytes()).unwrap();
    };
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1}}),
    );
    stdout.read_line(&mut line).unwrap();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.work(), "mcpServers": []}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let session: serde_json::Value = serde_json::from_str(&line).unwrap();
    let session = session["result"]["sessionId"].as_str().unwrap().to_owned();
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    line.clear();
    stdout.read_line(&mut line).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("reason=output-broken"), "{stderr}");
    drop(stdin);
}

#[test]
fn a_stream_that_ignores_cancellation_cannot_hold_the_exit() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"text": "partial"}], "hang_ignoring_abort": true}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.prompt(&session, "go");
    acp.until_text("partial");
    // The stream never ends by itself: an exit at all (the driver waits a bounded time)
    // means the teardown did not wait for it.
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(stored.contains("\"kind\":\"aborted\""), "{stored}");
}

#[tokio::test]
async fn closing_stdin_answers_the_open_prompt_even_when_its_command_resists_termination() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "s",
        json!([{"stream": [{"tool_call": {"name": "bash", "arguments": {"command":
            format!("trap '' TERM INT; bash -c 'trap \"\" TERM INT; exec sleep 1000.{m}'")}}}]}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    acp.until_update("tool_call");
    eventually("the command runs", || sleepers(&m) == 1).await;
    acp.close_stdin();
    let (code, stderr) = acp.wait_exit();
    assert_eq!(code, Some(0), "{stderr}");
    let response = acp
        .answered(&prompt)
        .expect("the open prompt is answered before exit");
    assert_eq!(response["result"]["stopReason"], "cancelled");
    all_gone(&m).await;
}

#[test]
fn without_input_dsh_writes_nothing_and_exits_0_when_the_input_closes() {
    let sandbox = Sandbox::new();
    let script = sandbox.script("s", json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    let out = dsh_e2e::run_with_stdin(sandbox.dsh(["--replay", &script, "acp"]), b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("teardown complete reason=input-closed agents=0 sessions=0"),
        "{stderr}"
    );
}
