//! Text from outside dsh never drives the terminal it is shown on: escape sequences and
//! controls in a command's output, in the model's answer and in a stored session are removed
//! before they reach a real pseudo-terminal; colours from a tool survive only when colour is
//! on, and are reset after the output that set them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::pty::Terminal;
use serde_json::json;

/// What a hostile command prints: clear screen, window title (BEL and ST), a clipboard write,
/// a DCS, a C1 CSI as UTF-8 and as a raw byte, a bell, a carriage return and a colour.
const HOSTILE_COMMAND: &str = r"printf 'out-before\033[2J\033]0;pwned-title\007\033]2;pwned\033\\\033]52;c;cHduZWQ=\007\033P1$r0m\033\\\302\2332J\2332J\007\r\033[31mRED\033[0m out-after\n'";

/// What a hostile model says, in pieces that split its sequences.
fn hostile_script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "hostile",
        json!([
            {"stream": [
                {"text": "say-before\u{1b}]2;pw"},
                {"text": "ned\u{7}\u{1b}[2J say-after"},
                {"tool_call": {"name": "bash", "arguments": {"command": HOSTILE_COMMAND}}}
            ]},
            {"stream": [{"text": "done\u{1b}]52;c;cHduZWQ=\u{7}\u{9b}31m"}], "finish": "stop"}
        ]),
    )
}

fn assert_inert(seen: &str) {
    for (what, bad) in [("ESC", '\u{1b}'), ("BEL", '\u{7}'), ("C1 CSI", '\u{9b}')] {
        assert!(!seen.contains(bad), "{what} reached the terminal: {seen:?}");
    }
    // The command line itself is shown (its `\033` are plain text); nothing else may carry
    // the payloads' words.
    let shown: Vec<&str> = seen
        .lines()
        .filter(|l| !l.starts_with("$ printf"))
        .collect();
    assert!(!shown.join("\n").contains("pwned"), "{seen:?}");
}

#[test]
fn hostile_output_and_answers_never_reach_the_terminal_raw() {
    let sandbox = Sandbox::new();
    let script = hostile_script(&sandbox);
    let term = Terminal::run(&sandbox, &["run", "--replay", &script, "go"]);
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    assert_inert(&seen);
    for visible in [
        "say-before say-after",
        "out-before",
        "RED out-after",
        "done",
    ] {
        assert!(seen.contains(visible), "{visible:?} missing: {seen:?}");
    }

    // The stored session replays as safely.
    let id = sandbox.first_session_id();
    let term = Terminal::run(&sandbox, &["sessions", "show", &id]);
    let (code, shown) = term.exit_code();
    assert_eq!(code, 0, "{shown:?}");
    assert_inert(&shown);
    assert!(shown.contains("RED out-after") && shown.contains("say-before say-after"));
}

#[test]
fn a_tool_s_colours_survive_when_colour_is_on_and_are_reset_after_it() {
    let sandbox = Sandbox::new();
    let script = hostile_script(&sandbox);
    let term = Terminal::run_with(
        &sandbox,
        &["run", "--color", "always", "--replay", &script, "go"],
        &[("TERM", "xterm-256color")],
    );
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    let red = seen
        .find("\u{1b}[31mRED")
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert!(seen[red..].contains("\u{1b}[0m"), "{seen:?}");
    for bad in ["\u{1b}]", "\u{1b}[2J", "\u{1b}P", "\u{9b}", "\u{7}"] {
        assert!(
            !seen.contains(bad),
            "{bad:?} reached the terminal: {seen:?}"
        );
    }
}

#[test]
fn a_hostile_command_is_shown_inert_in_the_permission_question() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "ask",
        json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "echo hi \u{1b}]2;pwned\u{7}\u{1b}[2Jthere"}}}]},
            {"stream": [{"text": "ok"}], "finish": "stop"}
        ]),
    );
    let mut term = Terminal::run(
        &sandbox,
        &["run", "--permission", "ask", "--replay", &script, "go"],
    );
    term.expect("dsh · allow bash: echo hi there  [y/N] ");
    term.type_keys(b"n\r");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen:?}");
    assert_inert(&seen);
}
