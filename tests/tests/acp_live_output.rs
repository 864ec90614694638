//! A command's output over ACP while it runs: appended to Zed's terminal card (and not sent
//! again at the end), or shown as the call's content to a client without cards; and what a
//! cancelled command printed stays in its final update.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use dsh_test_support::tree::fifo;
use serde_json::{Value, json};

fn updates_of(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .collect()
}

/// A script whose one call prints a line, waits on `gate`, prints another, and ends.
fn gated(sandbox: &Sandbox, gate: &std::path::Path) -> String {
    let command = format!("echo first line; cat {}; echo last line", gate.display());
    sandbox.script(
        "gated",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn a_card_gets_the_output_while_the_command_runs_and_only_once() {
    let sandbox = Sandbox::new();
    let gate = sandbox.root.path().join("gate");
    fifo(&gate);
    let script = gated(&sandbox, &gate);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    let live = acp.until("live output", |f| {
        f["params"]["update"]["_meta"]["terminal_output"]["data"] == "first line\n"
    });
    let card = live["params"]["update"]["toolCallId"].clone();
    assert!(
        live["params"]["update"]["status"].is_null(),
        "still running: {live}"
    );
    std::fs::write(&gate, b"middle line\n").unwrap();
    let (response, frames) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let of_card: Vec<Value> = updates_of(&frames)
        .into_iter()
        .filter(|u| u["toolCallId"] == card)
        .collect();
    let data: String = of_card
        .iter()
        .filter_map(|u| u["_meta"]["terminal_output"]["data"].as_str())
        .collect();
    assert_eq!(
        data, "middle line\nlast line\n",
        "the rest, appended once: {of_card:?}"
    );
    let last = of_card.last().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["_meta"]["terminal_exit"]["exit_code"], 0, "{last}");
    assert!(
        last["_meta"].get("terminal_output").is_none(),
        "not sent again: {last}"
    );
    acp.finish();
}

#[test]
fn a_client_without_cards_sees_the_output_so_far_as_the_call_s_content() {
    let sandbox = Sandbox::new();
    let gate = sandbox.root.path().join("gate");
    fifo(&gate);
    let script = gated(&sandbox, &gate);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    let live = acp.until("live content", |f| {
        f["params"]["update"]["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("first line"))
    });
    assert!(live["params"]["update"]["status"].is_null(), "{live}");
    std::fs::write(&gate, b"middle line\n").unwrap();
    let (response, frames) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let done = updates_of(&frames)
        .into_iter()
        .find(|u| u["status"] == "completed")
        .unwrap();
    let text = done["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("first line\nmiddle line\nlast line"),
        "{text}"
    );
    acp.finish();
}

#[tokio::test]
async fn a_cancelled_command_s_output_is_in_its_final_update() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "hang",
        json!([{"stream": [{"tool_call": {"name": "bash", "arguments":
            {"command": format!("echo printed before; sleep 1000.{m}")}}}]}]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    acp.until("live output", |f| {
        f["params"]["update"]["_meta"]["terminal_output"]["data"] == "printed before\n"
    });
    eventually("the command runs", || sleepers(&m) == 1).await;
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, frames) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let failed = updates_of(&frames)
        .into_iter()
        .find(|u| u["status"] == "failed")
        .unwrap();
    let text = failed["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("printed before\n[cancelled by the user after "),
        "{text}"
    );
    acp.finish();
    all_gone(&m).await;
}

#[test]
fn a_client_without_cards_gets_a_bounded_tail_while_it_runs_and_everything_at_the_end() {
    let sandbox = Sandbox::new();
    let gate = sandbox.root.path().join("gate");
    fifo(&gate);
    let command = format!(
        "for i in $(seq 1 150); do echo \"line $i of the build's long output, padded out\"; done; cat {}; echo last line",
        gate.display()
    );
    let script = sandbox.script(
        "long",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    acp.until("the tail of the output", |f| {
        f["params"]["update"]["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("line 150 of"))
    });
    std::fs::write(&gate, b"").unwrap();
    let (response, frames) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let updates = updates_of(&frames);
    let running: Vec<&str> = updates
        .iter()
        .filter(|u| u["status"].is_null())
        .filter_map(|u| u["content"][0]["content"]["text"].as_str())
        .collect();
    for text in &running {
        assert!(text.len() < 3 * 1024, "{} bytes in one update", text.len());
    }
    let done = updates.iter().find(|u| u["status"] == "completed").unwrap();
    let text = done["content"][0]["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("line 1 of the build") && text.contains("last line"),
        "the whole output once, at the end: {text}"
    );
    acp.finish();
}
