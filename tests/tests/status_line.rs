//! The status line on a real terminal, read through a terminal emulator: it shows what dsh
//! waits for (the model, a command), and no frame of it survives — not after a line the
//! command left open, not after a progress counter's carriage returns, not above `^C`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::pty::{Terminal, screen};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// No line of what a person sees holds a spinner frame.
fn no_frame_left(seen: &str) -> String {
    let shown = screen(seen, 200);
    for line in shown.lines() {
        assert!(
            !line.contains(SPINNER),
            "a frame survived: {line:?}\n--- screen ---\n{shown}"
        );
    }
    shown
}

/// A script that runs `command` in bash, then answers "done".
fn one_command(sandbox: &Sandbox, command: &str) -> String {
    sandbox.script(
        "status",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": command}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

fn on_a_terminal(sandbox: &Sandbox, script: &str) -> Terminal {
    Terminal::run_with(
        sandbox,
        &["run", "--color", "never", "--replay", script, "go"],
        &[("TERM", "xterm-256color")],
    )
}

#[test]
fn a_line_the_command_left_open_keeps_its_text_and_no_frame() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    let script = one_command(
        &sandbox,
        &format!(
            "printf 'half a line'; cat {}; printf ' and its end\\n'",
            fifo.display()
        ),
    );
    let mut term = on_a_terminal(&sandbox, &script);
    term.expect("half a line");
    std::fs::write(&fifo, b"").unwrap();
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    let shown = no_frame_left(&seen);
    assert!(shown.contains("\nhalf a line and its end\n"), "{shown}");
}

#[test]
fn a_progress_counter_is_redrawn_in_place_and_leaves_its_last_state() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    let script = one_command(
        &sandbox,
        &format!(
            "printf 'fetching 10%%\\r'; cat {}; printf 'fetching 60%%\\rfetching 100%%\\r\\n'",
            fifo.display()
        ),
    );
    let mut term = on_a_terminal(&sandbox, &script);
    term.expect("fetching 10%");
    std::fs::write(&fifo, b"").unwrap();
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    let shown = no_frame_left(&seen);
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines.contains(&"fetching 100%"), "{shown}");
    let output: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.starts_with("$ "))
        .collect();
    assert!(
        !output
            .iter()
            .any(|l| l.contains("10%") || l.contains("60%")),
        "the counter's earlier states are overwritten: {shown}"
    );
}

#[test]
fn ctrl_c_is_said_on_a_line_of_its_own_with_no_frame_above() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    let script = one_command(&sandbox, &format!("cat {}", fifo.display()));
    let mut term = on_a_terminal(&sandbox, &script);
    // The spinner is on the screen: the command runs.
    term.expect("· $ cat");
    term.type_keys(b"\x03");
    term.expect("Ctrl-C again to quit now");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 130, "{seen:?}");
    let shown = no_frame_left(&seen);
    assert!(
        shown
            .lines()
            .any(|l| l == "^C cancelling… (Ctrl-C again to quit now)"),
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_the_first_token_shows_a_spinner_that_goes_with_the_answer() {
    // The model answers only once the test saw the spinner.
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = MockModelServer::start(vec![
        MockResponse::text("the answer").held_by(release.clone()),
    ])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut term = Terminal::run_with(
        &sandbox,
        &[
            "--base-url",
            &base,
            "--model",
            "m",
            "run",
            "--color",
            "never",
            "go",
        ],
        &[("TERM", "xterm-256color"), ("DSH_API_KEY_ENV", "")],
    );
    let term = tokio::task::spawn_blocking(move || {
        term.expect("· waiting for the model");
        term
    })
    .await
    .unwrap();
    release.notify_one();
    let (code, seen) = tokio::task::spawn_blocking(move || term.exit_code())
        .await
        .unwrap();
    assert_eq!(code, 0, "{seen:?}");
    let shown = no_frame_left(&seen);
    assert!(shown.contains("\nthe answer\n"), "{shown}");
}
