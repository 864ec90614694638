//! What a newcomer met in a terminal and a script, against the built binary: a turn that ends
//! without an answer says so, counts read as words, an unknown slash command is answered
//! with those there are, a window smaller than the system message is a warning, the calls a
//! model streams show progress, and a model's hostile tool name never reaches a terminal raw.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::pty::{Terminal, screen};
use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

#[test]
fn a_turn_that_ends_without_an_answer_says_so_and_json_tells_a_script() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "silent",
        json!([
            {"stream": [{"tool_call": {"name": "nonexistent", "arguments": {}}}]},
            {"stream": [], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh(["run", "--replay", &script, "go"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("dsh · ended without an answer · 2 steps"),
        "{stderr}"
    );
    let out = sandbox
        .dsh(["run", "--json", "--replay", &script, "go"])
        .output()
        .unwrap();
    let end: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "turn_end")
        .unwrap();
    assert_eq!(end["reason"], "completed");
    assert_eq!(end["answered"], false, "{end}");

    let answering = sandbox.script(
        "answering",
        json!([{"stream": [{"text": "all good"}], "finish": "stop"}]),
    );
    let out = sandbox
        .dsh(["run", "--replay", &answering, "go"])
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("dsh · completed · 1 step ·"),
        "one step reads as one: {}",
        text(&out.stderr)
    );
}

#[test]
fn an_unknown_slash_command_is_answered_with_the_commands_there_are() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh(["run", "--replay", "demo", "/deploy now"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("there is no command /deploy; the commands here are /compact, /init"),
        "{stderr}"
    );
    assert!(sandbox.logs().is_empty(), "nothing reached a session");
}

#[test]
fn a_window_smaller_than_the_system_message_is_a_warning_not_a_percentage() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.work().join("AGENTS.md"),
        "Keep every line short. ".repeat(400),
    )
    .unwrap();
    let script = sandbox.script(
        "short",
        json!([{"stream": [{"text": "ok"}], "finish": "stop"}]),
    );
    let out = sandbox
        .dsh(["--context-window", "1024", "run", "--replay", &script, "go"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: the system message alone is ~")
            && stderr.contains("more than the context window of 1024 tokens"),
        "{stderr}"
    );
    assert!(stderr.contains("(over the window)"), "{stderr}");
    assert!(!stderr.contains("00%)"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_streaming_in_are_progress_in_json() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("nonexistent", &json!({"path": "x".repeat(10_000)})),
        MockResponse::text("done"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.run_against(&server.base_url(), &["--json", "go"]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let progress: Vec<&Value> = lines.iter().filter(|l| l["type"] == "progress").collect();
    assert!(!progress.is_empty(), "{lines:?}");
    assert_eq!(progress[0]["tool_calls"], 1);
    assert_eq!(progress[0]["tool"], "nonexistent");
    let call = lines.iter().position(|l| l["type"] == "tool_call").unwrap();
    let first = lines.iter().position(|l| l["type"] == "progress").unwrap();
    assert!(
        first < call,
        "progress comes while the call streams: {lines:?}"
    );
}

/// A model's tool name that would retitle the window, clear the screen and write the
/// clipboard.
const HOSTILE: &str = "x\u{1b}]2;pwned\u{7}\u{1b}[2J\u{1b}]52;c;cHduZWQ=\u{7}";

#[test]
fn a_hostile_tool_name_is_shown_inert_on_every_path() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "hostile-name",
        json!([
            {"stream": [{"tool_call": {"name": HOSTILE, "arguments": {"a": 1}}}]},
            {"stream": [{"tool_call": {"name": HOSTILE, "arguments": {"a": 2}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let inert = |seen: &str, what: &str| {
        for bad in ['\u{1b}', '\u{7}'] {
            let stray = seen
                .replace("\u{1b}[2K", "")
                .replace("\u{1b}[0m", "")
                .replace("\u{1b}[1m", "")
                .replace("\u{1b}[2m", "")
                .replace("\u{1b}[31m", "")
                .replace("\u{1b}[32m", "")
                .replace("\u{1b}[33m", "")
                .replace("\u{1b}[1;36m", "");
            assert!(
                !stray.contains(bad),
                "{what}: {bad:?} reached the terminal: {seen:?}"
            );
        }
        assert!(
            !seen.contains("pwned") && !seen.contains("cHduZWQ"),
            "{what}: {seen:?}"
        );
    };
    // Live, in colour and not. (A question names a tool that exists, whose name the
    // registry took; its unit test covers a hostile one too.)
    for args in [
        vec!["run", "--color", "never", "--replay", &script, "go"],
        vec!["run", "--color", "always", "--replay", &script, "go"],
    ] {
        let term = Terminal::run_with(&sandbox, &args, &[("TERM", "xterm-256color")]);
        let (code, seen) = term.exit_code();
        assert_eq!(code, 0, "{seen:?}");
        inert(&seen, "dsh run");
        assert!(
            screen(&seen, 200).contains("There is no tool named `x"),
            "{seen:?}"
        );
    }
    // The stored transcript, and the listing.
    let id = sandbox.first_session_id();
    let term = Terminal::run(&sandbox, &["sessions", "show", &id]);
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    inert(&seen, "sessions show");
    let term = Terminal::run(&sandbox, &["sessions", "list"]);
    let (_, seen) = term.exit_code();
    inert(&seen, "sessions list");
}
