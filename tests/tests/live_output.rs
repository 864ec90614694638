//! A command's output as it runs: on a real terminal while the command is still going, and
//! kept — what it printed and what ended it — when the call is cancelled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::pty::Terminal;
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
use serde_json::{Value, json};

#[test]
fn a_command_s_first_line_is_on_the_terminal_before_the_command_ends() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    // The command cannot end before the test has seen its first line and opened the fifo.
    let command = format!("echo first line; cat {}; echo last line", fifo.display());
    let script = sandbox.script(
        "slow",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    term.expect("\nfirst line");
    assert!(!term.seen.contains("[exit"), "still running: {}", term.seen);
    std::fs::write(&fifo, b"middle line\n").unwrap();
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    let seen = seen.replace("\r\n", "\n");
    assert!(
        seen.contains("first line\nmiddle line\nlast line\n[exit 0 · "),
        "shown once, in order, then the status: {seen}"
    );
    assert_eq!(
        seen.lines().filter(|l| *l == "first line").count(),
        1,
        "not repeated at the end: {seen}"
    );
}

#[tokio::test]
async fn a_cancelled_command_keeps_what_it_printed_for_the_user_and_the_model() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "hang",
        json!([{"stream": [{"tool_call": {"name": "bash", "arguments":
            {"command": format!("echo printed before; sleep 1000.{m}")}}}]}]),
    );
    let mut term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    term.expect("\nprinted before");
    eventually("the command runs", || sleepers(&m) == 1).await;
    term.type_keys(b"\x03");
    term.expect("[cancelled by the user after ");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 130, "{seen}");
    all_gone(&m).await;
    let log = std::fs::read_to_string(sandbox.logs().remove(0)).unwrap();
    let result: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool/result")
        .unwrap();
    let content = result["data"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("printed before\n[cancelled by the user after "),
        "the model is told what was printed: {content}"
    );
    assert_eq!(result["data"]["error_code"], "cancelled");
}

#[test]
fn a_spinner_with_the_command_shows_while_it_runs_and_is_gone_after() {
    let sandbox = Sandbox::new();
    let fifo_path = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo_path);
    let command = format!("echo first line; cat {}", fifo_path.display());
    let script = sandbox.script(
        "spin",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut term = Terminal::run_with(
        &sandbox,
        &["run", "--replay", &script, "go"],
        &[("TERM", "xterm-256color")],
    );
    term.expect("· $ echo first line; cat");
    std::fs::write(&fifo_path, b"").unwrap();
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    let last_frame = seen.rfind("· $ echo first line; cat").unwrap();
    let status = seen.find("[exit 0 · ").unwrap();
    assert!(
        last_frame < status,
        "no frame after the command ended: {seen:?}"
    );
    assert!(
        seen[last_frame..status].contains("\u{1b}[2K"),
        "cleared: {seen:?}"
    );
}
