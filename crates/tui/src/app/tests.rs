//! Behaviour tests of the app, driven without a terminal: keys and view events in, effects,
//! scrollback lines and the drawn viewport out.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_agent::commands::Commands;
use dsh_agent::{ConfigChange, MessageSource, TurnOutcome};
use dsh_kernel::CancellationToken;
use dsh_session::{CancelCause, SessionId, TurnEndReason};
use dsh_view::{Shown, ViewEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Line;

use super::{App, Effect, Input};
use crate::composer::Composer;
use crate::gate::{Answer, Question};
use crate::history::History;
use crate::status::Status;
use crate::transcript::Palette;

fn app() -> App {
    let dir = std::env::temp_dir();
    let (commands, _) = Commands::discover(&dir, None);
    App::new(
        Composer::new(History::new(vec!["an older prompt".into()])),
        Palette { color: false },
        Status {
            dir: "~/p".into(),
            branch: Some("main".into()),
            model: "deepseek-v4".into(),
            reasoning: None,
            mode: "ask".into(),
            context: Some((1200, 128_000)),
            cost: None,
        },
        commands,
        dir,
    )
}

fn key(code: KeyCode) -> Input {
    Input::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Input {
    Input::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

/// Types `text` and returns every effect.
fn type_text(app: &mut App, text: &str, now: Instant) -> Vec<Effect> {
    text.chars()
        .flat_map(|c| app.input(key(KeyCode::Char(c)), now))
        .collect()
}

fn view(shown: Shown) -> Input {
    Input::View {
        events: vec![ViewEvent {
            session: SessionId::mint(),
            shown,
        }],
        tally: None,
    }
}

fn text(lines: &[Line<'_>]) -> Vec<String> {
    lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

/// The viewport as a terminal `width` columns wide would show it.
fn drawn(app: &App, width: u16, now: Instant) -> String {
    let height = app.height(width, 40, now);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            if let Some(at) = app.render(area, frame.buffer_mut(), now) {
                frame.set_cursor_position(at);
            }
        })
        .unwrap();
    terminal.backend().to_string()
}

fn ended() -> Input {
    Input::Settled(TurnOutcome::Ended {
        turn: 1,
        reason: TurnEndReason::Completed,
    })
}

fn bash_question(command: &str) -> (Question, tokio::sync::oneshot::Receiver<Answer>) {
    Question::new(crate::gate::bash(command, CancellationToken::new()))
}

#[test]
fn a_prompt_shows_at_once_with_a_spinner_until_its_turn_settles() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "fix the build", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        matches!(&effects[..], [Effect::Remember(r), Effect::Send(m)] if r == "fix the build" && m.text == "fix the build"),
        "{effects:?}"
    );
    assert_eq!(text(&app.take_scrollback()), ["› fix the build"]);
    assert!(app.running(), "running from the moment it is sent");
    let shown = drawn(&app, 60, now + Duration::from_secs(3));
    assert!(
        shown.contains("3s · waiting for the model · esc to interrupt"),
        "{shown}"
    );
    // The log's copy of the prompt is not shown a second time.
    app.input(
        view(Shown::Prompt {
            text: "fix the build".into(),
            source: MessageSource::User,
        }),
        now,
    );
    app.input(view(Shown::Text("Done.\n".into())), now);
    assert_eq!(text(&app.take_scrollback()), ["Done."]);
    app.input(ended(), now);
    assert!(!app.running());
}

#[test]
fn enter_while_a_turn_runs_steers_and_shows_the_message_queued_until_the_model_sees_it() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "one", now);
    app.input(key(KeyCode::Enter), now);
    app.take_scrollback();
    type_text(&mut app, "use the other file", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        matches!(&effects[..], [Effect::Remember(_), Effect::Steer(m)] if m.text == "use the other file"),
        "{effects:?}"
    );
    assert!(
        app.take_scrollback().is_empty(),
        "not in the scrollback yet"
    );
    assert!(
        drawn(&app, 80, now).contains("⧗ queued for the next step: use the other file"),
        "{}",
        drawn(&app, 80, now)
    );
    app.input(
        view(Shown::Prompt {
            text: "use the other file".into(),
            source: MessageSource::User,
        }),
        now,
    );
    assert_eq!(text(&app.take_scrollback()), ["› use the other file"]);
    assert!(!drawn(&app, 80, now).contains("queued"));
    // Both tickets settle before the turn is over.
    app.input(ended(), now);
    assert!(app.running());
    app.input(ended(), now);
    assert!(!app.running());
}

#[test]
fn esc_and_ctrl_c_reach_the_turn_even_while_a_question_is_asked() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "go", now);
    app.input(key(KeyCode::Enter), now);
    let (question, _answered) = bash_question("rm -rf build");
    app.input(Input::Asked(question), now);
    let effects = app.input(key(KeyCode::Esc), now);
    assert!(matches!(&effects[..], [Effect::Cancel]), "{effects:?}");
    // Ctrl-C cancels; a second within a second quits.
    let effects = app.input(ctrl('c'), now);
    assert!(matches!(&effects[..], [Effect::Cancel]), "{effects:?}");
    assert!(!app.quitting());
    let effects = app.input(ctrl('c'), now + Duration::from_millis(500));
    assert!(matches!(&effects[..], [Effect::Quit]), "{effects:?}");
    assert!(app.quitting());
}

#[test]
fn a_second_ctrl_c_quits_even_when_the_cancel_ended_the_turn_between_them() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "go", now);
    app.input(key(KeyCode::Enter), now);
    app.input(ctrl('c'), now);
    app.input(ended(), now);
    assert!(drawn(&app, 60, now).contains("Ctrl-C again to quit (or Ctrl-D)"));
    let effects = app.input(ctrl('c'), now + Duration::from_millis(300));
    assert!(matches!(&effects[..], [Effect::Quit]), "{effects:?}");
}

#[test]
fn ctrl_d_quits_only_on_an_empty_composer_and_ctrl_c_clears_first() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "draft", now);
    assert!(app.input(ctrl('d'), now).is_empty());
    assert!(app.input(ctrl('c'), now).is_empty(), "clears the draft");
    assert!(
        !drawn(&app, 40, now).contains("draft"),
        "the draft is cleared"
    );
    assert!(
        app.input(ctrl('c'), now + Duration::from_secs(5))
            .is_empty()
    );
    assert!(drawn(&app, 60, now).contains("Ctrl-C again to quit"));
    let effects = app.input(ctrl('d'), now);
    assert!(matches!(&effects[..], [Effect::Quit]), "{effects:?}");
}

#[test]
fn a_question_is_answered_with_y_a_or_n_and_a_reason() {
    let mut app = app();
    let now = Instant::now();
    let (question, _) = bash_question("git commit -m x");
    app.input(Input::Asked(question), now);
    let asked = text(&app.take_scrollback());
    assert_eq!(asked, ["? bash wants to run $ git commit -m x"]);
    let shown = drawn(&app, 120, now);
    assert!(
        shown.contains("a yes, always here: bash commands starting with `git commit`"),
        "{shown}"
    );
    let effects = app.input(key(KeyCode::Char('a')), now);
    assert!(
        matches!(&effects[..], [Effect::Answer(_, Answer::Always)]),
        "{effects:?}"
    );
    let (question, _) = bash_question("rm -rf /");
    app.input(Input::Asked(question), now);
    assert!(app.input(key(KeyCode::Char('n')), now).is_empty());
    type_text(&mut app, "never", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        matches!(&effects[..], [Effect::Answer(_, Answer::No(r))] if r == "never"),
        "{effects:?}"
    );
    let said = text(&app.take_scrollback());
    assert!(said.contains(&"  ✗ declined: never".to_owned()), "{said:?}");
}

#[test]
fn slash_commands_filter_a_menu_and_an_unknown_one_lists_them() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "/mo", now);
    let shown = drawn(&app, 80, now);
    assert!(shown.contains("model") && shown.contains("mode"), "{shown}");
    assert!(!shown.contains("compact"), "{shown}");
    // Tab completes the name; the argument follows.
    app.input(key(KeyCode::Tab), now);
    type_text(&mut app, "deepseek-v4-pro", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::Configure(ConfigChange::Model(m)) if m == "deepseek-v4-pro")
        ),
        "{effects:?}"
    );
    assert!(
        drawn(&app, 120, now).contains("deepseek-v4-pro"),
        "the status line follows"
    );
    type_text(&mut app, "/deploy now", now);
    app.input(key(KeyCode::Enter), now);
    let said = text(&app.take_scrollback()).join("\n");
    assert!(
        said.contains("there is no command /deploy; the commands are /help, /model"),
        "{said}"
    );
    // A path is a question, not a command.
    type_text(&mut app, "/usr/bin is missing", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Send(_))),
        "{effects:?}"
    );
}

#[test]
fn the_mode_picker_chooses_with_enter() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "/mode", now);
    app.input(key(KeyCode::Enter), now);
    assert!(drawn(&app, 100, now).contains("choose a mode"));
    type_text(&mut app, "acc", now);
    let effects = app.input(key(KeyCode::Enter), now);
    assert!(
        matches!(&effects[..], [Effect::Configure(ConfigChange::Mode(m))] if m.as_str() == "accept-edits"),
        "{effects:?}"
    );
}

#[test]
fn hostile_text_never_reaches_the_viewport_raw() {
    let mut app = app();
    let now = Instant::now();
    app.input(Input::Paste("a\x1b]52;c;AAAA\x07b\x1b[2J".into()), now);
    type_text(&mut app, "x", now);
    app.input(key(KeyCode::Enter), now);
    app.input(view(Shown::Text("\x1b[31mred".into())), now);
    let lines = text(&app.take_scrollback()).join("\n");
    assert!(!lines.contains('\x1b'), "{lines:?}");
    let shown = drawn(&app, 80, now);
    assert!(
        !shown.contains('\x1b') && !shown.contains('\x07'),
        "{shown:?}"
    );
    // A paste still in the composer shows its control characters as marks.
    app.input(Input::Paste("x\x1b[2Jy".into()), now);
    let shown = drawn(&app, 80, now);
    assert!(shown.contains("x\u{fffd}[2Jy"), "{shown:?}");
}

#[test]
fn a_cancelled_turn_keeps_what_was_shown_and_says_so() {
    let mut app = app();
    let now = Instant::now();
    type_text(&mut app, "go", now);
    app.input(key(KeyCode::Enter), now);
    app.input(view(Shown::Text("partial answ".into())), now);
    app.input(key(KeyCode::Esc), now);
    app.input(
        view(Shown::TurnEnded {
            turn: 1,
            reason: TurnEndReason::Aborted {
                cause: CancelCause::User,
            },
            answered: false,
        }),
        now,
    );
    app.input(ended(), now);
    let lines = text(&app.take_scrollback());
    assert_eq!(lines, ["› go", "partial answ", "[cancelled]"]);
}

#[test]
fn viewports_at_40_and_120_columns() {
    let now = Instant::now();
    let mut idle = app();
    type_text(
        &mut idle,
        "a prompt long enough to wrap at forty columns, twice over",
        now,
    );
    insta::assert_snapshot!("composer_wrapped_40", drawn(&idle, 40, now));
    insta::assert_snapshot!("composer_wrapped_120", drawn(&idle, 120, now));
    let mut asking = app();
    type_text(&mut asking, "go", now);
    asking.input(key(KeyCode::Enter), now);
    let (question, _) = bash_question("cargo test --workspace");
    asking.input(Input::Asked(question), now);
    insta::assert_snapshot!(
        "question_40",
        drawn(&asking, 40, now + Duration::from_secs(2))
    );
    insta::assert_snapshot!(
        "question_120",
        drawn(&asking, 120, now + Duration::from_secs(2))
    );
    let mut menu = app();
    type_text(&mut menu, "/", now);
    insta::assert_snapshot!("menu_40", drawn(&menu, 40, now));
    insta::assert_snapshot!("menu_120", drawn(&menu, 120, now));
    // A running command: its card, and the last lines of its output under it.
    let mut running = app();
    type_text(&mut running, "build it", now);
    running.input(key(KeyCode::Enter), now);
    let card = crate::transcript::tests::card(
        "c1",
        "cargo build --workspace --all-targets",
        crate::transcript::tests::terminal("cargo build --workspace --all-targets"),
    );
    running.input(view(Shown::CallOpened(card)), now);
    let output = (1..=8)
        .map(|i| format!("   Compiling crate-number-{i} v0.1.0 (/home/user/src/project/crates/crate-number-{i})\n"))
        .collect::<String>();
    running.input(
        view(Shown::CallOutput {
            card: "c1".into(),
            call_id: "c1".into(),
            output: output + "   Building [=====>    ] 9/14",
        }),
        now,
    );
    let later = now + Duration::from_secs(7);
    insta::assert_snapshot!("running_card_40", drawn(&running, 40, later));
    insta::assert_snapshot!("running_card_120", drawn(&running, 120, later));
}
