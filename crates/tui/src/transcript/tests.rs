//! The transcript on its own: streamed text split anywhere, a command's card from start to
//! end, a change's diff, and hostile bytes kept off the terminal.

use std::sync::Arc;

use dsh_tools::{TerminalExit, ToolKindHint, ToolResultView};
use dsh_view::{Card, CardEnd, Closed, Look, Shown};
use ratatui::text::Line;
use serde_json::Value;

use super::{Palette, Transcript};

fn text(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

pub(crate) fn card(id: &str, title: &str, look: Look) -> Arc<Card> {
    Arc::new(Card {
        id: id.into(),
        call: dsh_session::ToolCallRecord {
            turn: 1,
            step: 1,
            call_id: id.into(),
            name: "sh".into(),
            arguments: "{}".into(),
        },
        name: "sh".into(),
        title: title.into(),
        kind: ToolKindHint::Execute,
        look,
        locations: Vec::new(),
        raw_input: Value::Null,
        opened_at: 0,
    })
}

pub(crate) fn terminal(command: &str) -> Look {
    Look::Terminal {
        command: command.into(),
        description: None,
        cwd: None,
    }
}

#[test]
fn streamed_markdown_is_finished_line_by_line_and_the_rest_stays_live() {
    let mut transcript = Transcript::new(Palette { color: false });
    for piece in ["# Ti", "tle\n- one", "\n- t", "wo"] {
        transcript.show(Shown::Text(piece.into()));
    }
    assert_eq!(text(&transcript.take_finished()), ["Title", "• one"]);
    assert_eq!(
        text(&transcript.live(200)),
        ["- two"],
        "an unfinished line is live"
    );
    transcript.show(Shown::TurnEnded {
        turn: 1,
        reason: dsh_session::TurnEndReason::Completed,
        answered: true,
    });
    assert_eq!(text(&transcript.take_finished()), ["• two"]);
    assert!(transcript.live(200).is_empty());
}

#[test]
fn a_command_runs_live_then_is_kept_with_its_status_and_last_lines() {
    let mut transcript = Transcript::new(Palette { color: false });
    let running = card("c1", "make test", terminal("make test"));
    transcript.show(Shown::CallOpened(running.clone()));
    for piece in ["building\n10%\r", "55%\r99%"] {
        transcript.show(Shown::CallOutput {
            card: "c1".into(),
            call_id: "c1".into(),
            output: piece.into(),
        });
    }
    assert_eq!(
        text(&transcript.live(200)),
        ["▸ make test", "  building", "  99%"],
        "a progress counter shows its last state"
    );
    transcript.show(Shown::CallClosed(Closed {
        card: running,
        end: CardEnd::Completed {
            content: String::new(),
            shown: ToolResultView::Terminal {
                output: "building\nFAILED: 2 tests\n".into(),
                exit: TerminalExit {
                    exit_code: Some(2),
                    ..TerminalExit::default()
                },
            },
        },
        elapsed_ms: Some(10),
    }));
    assert!(transcript.live(200).is_empty());
    assert_eq!(
        text(&transcript.take_finished()),
        ["✗ make test", "  building", "  FAILED: 2 tests", "  exit 2"]
    );
}

#[test]
fn a_change_is_kept_as_its_summary_and_numbered_changed_lines() {
    let mut transcript = Transcript::new(Palette { color: true });
    let edit = card(
        "e1",
        "Edit src/lib.rs",
        Look::Generic {
            summary: Some("src/lib.rs".into()),
            content: Vec::new(),
        },
    );
    transcript.show(Shown::CallOpened(edit.clone()));
    transcript.show(Shown::CallClosed(Closed {
        card: edit,
        end: CardEnd::Completed {
            content: String::new(),
            shown: ToolResultView::Diff {
                path: "src/lib.rs".into(),
                old_text: "a\nb\nc\n".into(),
                new_text: "a\nB\nc\n".into(),
                first_line: 10,
                created: false,
                summary: "edited src/lib.rs: 1 replacement at line 11".into(),
            },
        },
        elapsed_ms: Some(1),
    }));
    let finished = transcript.take_finished();
    assert_eq!(
        text(&finished),
        [
            "✓ Edit src/lib.rs",
            "  edited src/lib.rs: 1 replacement at line 11",
            "    11 - b",
            "    11 + B"
        ]
    );
    assert_eq!(finished[2].style.fg, Some(ratatui::style::Color::Red));
}

#[test]
fn hostile_output_never_reaches_the_terminal_raw() {
    let mut transcript = Transcript::new(Palette { color: true });
    let running = card("h1", "cat evil", terminal("cat evil"));
    transcript.show(Shown::CallOpened(running.clone()));
    let hostile = "x\u{1b}]2;pwned\u{7}\u{1b}[2J\u{1b}]52;c;aGk=\u{7}y\n";
    transcript.show(Shown::CallOutput {
        card: "h1".into(),
        call_id: "h1".into(),
        output: hostile.into(),
    });
    let live = text(&transcript.live(200));
    transcript.show(Shown::CallClosed(Closed {
        card: running,
        end: CardEnd::Failed {
            content: format!("{hostile}[cancelled by the user after 1.0 s]"),
            code: Some("cancelled".into()),
            shown: Some(ToolResultView::Terminal {
                output: hostile.into(),
                exit: TerminalExit::default(),
            }),
        },
        elapsed_ms: None,
    }));
    let finished = text(&transcript.take_finished());
    for line in live.iter().chain(&finished) {
        assert!(!line.contains(['\u{1b}', '\u{7}']), "{line:?}");
    }
    assert!(finished.iter().any(|l| l == "  xy"), "{finished:?}");
}
