//! The file tools in `dsh run`: a read and an edit shown as one line and a numbered diff, the
//! file changed on disk, and `--permission accept-edits` letting edits through while a
//! command, with nobody to ask, is refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_support::tree::write;
use serde_json::json;

fn edit_then_command(sandbox: &Sandbox) -> String {
    sandbox.script(
        "files",
        json!([
            {"stream": [{"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}}}]},
            {"stream": [{"tool_call": {"name": "edit", "arguments": {"path": "notes.txt",
                "old_string": "two", "new_string": "2"}}}]},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "touch ran"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn a_read_is_one_line_and_an_edit_a_numbered_diff() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "one\ntwo\nthree\n");
    let script = edit_then_command(&sandbox);
    let out = sandbox
        .dsh_without_terminal(["run", "--color", "never", "--replay", &script, "go"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n2\nthree\n");
    assert!(
        stderr.contains("▸ read notes.txt\n  read notes.txt: 3 lines\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "▸ edit notes.txt\n  edited notes.txt: 1 replacement at line 2\n     1   one\n     2 - two\n     2 + 2\n     3   three\n"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains("\"old_string\""),
        "no raw arguments: {stderr}"
    );
}

#[test]
fn accept_edits_lets_edits_through_and_still_asks_before_commands() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "one\ntwo\nthree\n");
    let script = edit_then_command(&sandbox);
    let out = sandbox
        .dsh_without_terminal([
            // Unconfined, a command is not an edit: it asks.
            "--sandbox",
            "full-access",
            "run",
            "--color",
            "never",
            "--permission",
            "accept-edits",
            "--replay",
            &script,
            "go",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n2\nthree\n");
    assert!(
        !sandbox.work().join("ran").exists(),
        "with no terminal to ask, the command is refused: {stderr}"
    );
}

#[test]
fn accept_edits_still_asks_before_a_write_outside_the_project() {
    let sandbox = Sandbox::new();
    let outside = sandbox.root.path().join("outside.txt");
    let inside = sandbox.work().join("inside.txt");
    let script = sandbox.script(
        "outside",
        json!([
            {"stream": [
                {"tool_call": {"name": "write", "arguments": {"path": outside, "content": "x\n"}}},
                {"tool_call": {"name": "write", "arguments": {"path": "inside.txt", "content": "y\n"}}}
            ]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh_without_terminal([
            "run",
            "--permission",
            "accept-edits",
            "--replay",
            &script,
            "go",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!outside.exists(), "nobody could be asked: {stderr}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "y\n");
}

#[test]
fn in_ask_mode_the_question_shows_the_diff_once_and_a_yes_applies_it() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "one\ntwo\nthree\n");
    let script = sandbox.script(
        "ask",
        json!([
            {"stream": [{"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}}}]},
            {"stream": [{"tool_call": {"name": "edit", "arguments": {"path": "notes.txt",
                "old_string": "two", "new_string": "2"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut term = dsh_e2e::pty::Terminal::run(
        &sandbox,
        &["run", "--permission", "ask", "--replay", &script, "go"],
    );
    term.expect("dsh · allow edit: notes.txt  [y/N] ");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "one\ntwo\nthree\n",
        "nothing changes before the answer"
    );
    term.type_keys(b"y\r");
    let (code, seen) = term.exit_code();
    let seen = seen.replace("\r\n", "\n");
    assert_eq!(code, 0, "{seen}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n2\nthree\n");
    let question = seen.find("  [y/N] ").unwrap();
    assert!(
        seen[..question].contains("     2 - two\n     2 + 2\n"),
        "the question shows the diff: {seen}"
    );
    assert!(
        seen[..question].contains("will edit notes.txt: 1 replacement at line 2")
            && !seen[..question].contains("edited notes.txt"),
        "before the answer it says what will change, not what did: {seen}"
    );
    assert!(
        !seen[question..].contains("     2 - two"),
        "the result does not show it again: {seen}"
    );
    assert!(
        seen[question..].contains("edited notes.txt: 1 replacement at line 2"),
        "{seen}"
    );
}
