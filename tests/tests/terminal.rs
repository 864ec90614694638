//! `dsh run` on a real pseudo-terminal, as a person sees it: the whole transcript on the
//! terminal in order, and Ctrl-C typed at the keyboard reaching dsh and not the tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::pty::Terminal;
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};

#[test]
fn the_demo_reads_on_a_terminal_as_one_ordered_transcript() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("notes.txt"), "x").unwrap();
    let term = Terminal::run(&sandbox, &["run", "--replay", "demo", "look"]);
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    let seen = seen.replace("\r\n", "\n");
    assert!(
        !seen.contains('\u{1b}'),
        "no colour with TERM=dumb: {seen:?}"
    );
    let order = [
        "dsh · session ",
        "[reasoning]\nThe user wants an overview. I'll look around first.\n[/reasoning]\n",
        "I'll take a look around.\n$ pwd && ls -la  # Show the working directory and its entries\n",
        "notes.txt\n[exit 0 · ",
        "$ echo \"entries: $(ls -A | wc -l)\"; uname -sm; date -u +%Y-%m-%dT%H:%M:%SZ; mkdir -p .dsh-demo",
        "  # Count entries, show the system, make a scratch file\nentries: 1\n",
        "▸ read .dsh-demo/notes.md\n  read .dsh-demo/notes.md: 4 lines\n",
        "▸ edit .dsh-demo/notes.md\n  edited .dsh-demo/notes.md: 1 replacement at line 3\n",
        "     3 - status: draft\n     3 + status: reviewed by dsh\n",
        "$ cat .dsh-demo/notes.md && rm -r .dsh-demo",
        "The commands and file tools above ran for real through dsh's tools",
        "dsh · completed · 5 steps",
    ];
    let mut at = 0;
    for part in order {
        let found = seen[at..]
            .find(part)
            .unwrap_or_else(|| panic!("{part:?} after byte {at} in:\n{seen}"));
        at += found + part.len();
    }
}

#[tokio::test]
async fn ctrl_c_typed_on_the_terminal_cancels_the_turn_and_reaches_only_dsh() {
    let sandbox = Sandbox::new();
    let m = marker();
    let path = sandbox.root.path().join("hang.json");
    let script = serde_json::json!({
        "version": 1,
        "name": "hang",
        "entries": [{"stream": [{"tool_call": {"name": "bash",
            "arguments": {"command": format!("sleep 1000.{m}")}}}]}]
    });
    std::fs::write(&path, script.to_string()).unwrap();
    let script = path.display().to_string();
    let mut term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    term.expect("$ sleep");
    eventually("the tool runs", || sleepers(&m) == 1).await;
    term.type_keys(b"\x03");
    term.expect("^C cancelling… (Ctrl-C again to quit now)");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 130, "{seen}");
    assert!(seen.contains("dsh · cancelled"), "{seen}");
    all_gone(&m).await;
}

/// A script whose only call creates `made.txt`, then answers "done".
fn touching_script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "touch",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "touch made.txt && echo made it"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn permission_ask_runs_the_call_only_after_yes_on_the_terminal() {
    let sandbox = Sandbox::new();
    let script = touching_script(&sandbox);
    let mut term = Terminal::run(
        &sandbox,
        &["run", "--permission", "ask", "--replay", &script, "go"],
    );
    term.expect("edits and commands ask first");
    term.expect("dsh · allow bash: touch made.txt && echo made it  [y/N] ");
    assert!(
        !sandbox.work().join("made.txt").exists(),
        "ran before the answer"
    );
    assert!(
        !term.seen.contains("$ touch"),
        "shown in its question, not as running: {}",
        term.seen
    );
    term.type_keys(b"y\r");
    term.expect("made it");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    let question = seen.find("  [y/N] ").unwrap();
    let running = seen.find("$ touch made.txt && echo made it").unwrap();
    assert!(
        question < running,
        "echoed as running after the yes: {seen}"
    );
    assert!(sandbox.work().join("made.txt").exists());
    assert!(seen.contains("done"), "{seen}");
}

#[test]
fn permission_ask_declined_tells_the_model_and_runs_nothing() {
    let sandbox = Sandbox::new();
    let script = touching_script(&sandbox);
    let mut term = Terminal::run(
        &sandbox,
        &["run", "--permission", "ask", "--replay", &script, "go"],
    );
    term.expect("  [y/N] ");
    term.type_keys(b"n\r");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    assert!(!sandbox.work().join("made.txt").exists(), "{seen}");
    assert!(
        !seen.contains("$ touch"),
        "a declined call is never shown as running: {seen}"
    );
    assert!(
        seen.contains("declined this call: they answered no on the terminal"),
        "{seen}"
    );
    assert!(!seen.contains("\nmade it"), "{seen}");
    assert!(seen.contains("done"), "{seen}");
}

/// The tour script: reasoning, text, a command that prints and fails, and an answer.
fn tour(sandbox: &Sandbox) -> String {
    sandbox.script(
        "tour",
        serde_json::json!([
            {"stream": [
                {"reasoning": "Two lines, then a failure."},
                {"text": "Let me check."},
                {"tool_call": {"name": "bash",
                    "arguments": {"command": "printf 'one\\ntwo\\n'; echo oops >&2; exit 3",
                                  "description": "print and fail"}}}
            ]},
            {"stream": [{"text": "It printed two lines and failed with status 3."}],
             "finish": "stop"}
        ]),
    )
}

/// A whole transcript as the terminal received it, ids and times masked.
fn transcript(colour: bool) -> String {
    let sandbox = Sandbox::new();
    let script = tour(&sandbox);
    let when = if colour { "always" } else { "never" };
    let term = Terminal::run_with(
        &sandbox,
        &["run", "--color", when, "--replay", &script, "go"],
        &[("TERM", if colour { "xterm-256color" } else { "dumb" })],
    );
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    seen.replace("\r\n", "\n")
}

#[test]
fn a_turn_on_the_terminal_reads_as_a_person_sees_it() {
    for (colour, name) in [(false, "plain"), (true, "coloured")] {
        let seen = transcript(colour);
        insta::with_settings!({filters => vec![
            (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "[session id]"),
            (r"· \d+(\.\d+)? s\]", "· [seconds] s]"),
            // The estimate counts the system prompt, which names the sandbox and the machine.
            (r"context ~\d+(\.\d+)?k/", "context ~[tokens]/"),
            // The status line's frames, and how many there are, depend on timing: each is
            // removed with the erase that ends it.
            (r"\r\x1b\[2K[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏][^\r\n]*\r\x1b\[2K", ""),
        ]}, {
            insta::assert_snapshot!(name, seen);
        });
    }
}

#[tokio::test]
async fn a_second_ctrl_c_quits_at_once_even_when_the_command_ignores_sigterm() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "stubborn",
        serde_json::json!([{"stream": [{"tool_call": {"name": "bash",
            "arguments": {"command": format!("trap '' TERM INT; sleep 1000.{m}")}}}]}]),
    );
    let mut term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    term.expect("$ trap");
    eventually("the tool runs", || sleepers(&m) == 1).await;
    term.type_keys(b"\x03");
    term.expect("Ctrl-C again to quit now");
    term.type_keys(b"\x03");
    // The group ignores SIGTERM, so only the forced path (SIGKILL at once) meets this bound;
    // the graceful one waits out a 2 s grace.
    let (code, seen) = term.exit_within(std::time::Duration::from_millis(1000));
    assert_eq!(code, 130, "{seen}");
    all_gone(&m).await;
}

#[tokio::test]
async fn the_end_of_a_run_names_the_background_tasks_it_stops() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "server",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments":
                {"command": format!("sleep 1000.{m}"), "run_in_background": true}}}]},
            {"stream": [{"text": "started it"}], "finish": "stop"}
        ]),
    );
    let term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    let notice = seen
        .find("dsh · stopped background task sh-")
        .unwrap_or_else(|| panic!("{seen}"));
    assert!(
        seen[notice..].contains(&format!("(sleep 1000.{m})")),
        "{seen}"
    );
    assert!(notice < seen.find("dsh · completed").unwrap(), "{seen}");
    all_gone(&m).await;
}

#[test]
fn the_header_and_footer_fit_a_narrow_terminal_between_their_parts() {
    let sandbox = Sandbox::new();
    let term = Terminal::run_sized(
        &sandbox,
        &["run", "--replay", "demo", "look"],
        &[("TERM", "dumb")],
        70,
    );
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    let seen = seen.replace("\r\n", "\n");
    let lines: Vec<&str> = seen.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.starts_with("dsh · session"))
        .unwrap();
    let footer = lines
        .iter()
        .position(|l| l.starts_with("dsh · completed"))
        .unwrap();
    for at in [header, header + 1, footer, footer + 1] {
        assert!(
            lines[at].chars().count() <= 70,
            "too wide: {:?}\n{seen}",
            lines[at]
        );
    }
    assert!(
        lines[footer + 1].starts_with("  "),
        "a continuation: {seen}"
    );
    assert!(
        seen.contains("saved: dsh sessions show "),
        "no part is cut: {seen}"
    );
}

#[test]
fn with_colour_a_failing_exit_is_red_and_the_command_bold_with_its_description() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "fails",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "exit 3", "description": "fail on purpose"}}}]},
            {"stream": [{"text": "it failed"}], "finish": "stop"}
        ]),
    );
    let term = Terminal::run_with(
        &sandbox,
        &["run", "--color", "always", "--replay", &script, "go"],
        &[("TERM", "xterm-256color")],
    );
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    assert!(
        seen.contains("\u{1b}[1mexit 3\u{1b}[0m  \u{1b}[2m# fail on purpose\u{1b}[0m"),
        "{seen:?}"
    );
    assert!(seen.contains("\u{1b}[31m[exit 3 · "), "{seen:?}");
    assert!(seen.contains("\u{1b}[32mcompleted\u{1b}[0m"), "{seen:?}");
}

#[test]
fn on_a_terminal_a_command_starts_in_a_session_of_its_own_without_the_terminal() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "session",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command":
                "tty; [ \"$(ps -o sid= -p $$ | tr -d ' ')\" = \"$$\" ] && echo own-session"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("not a tty"), "{seen}");
    assert!(seen.contains("own-session"), "{seen}");
}
