//! The interactive session's state machine, pure: it takes an [`Input`] (a key, a paste, view
//! events, a question, a settled turn) and gives back the [`Effect`]s the driver carries out
//! (send, steer, cancel, answer, configure), the lines for the scrollback, and the viewport
//! to draw. Every behaviour test drives it without a terminal.
//!
//! Rules it keeps:
//! - A turn is running from the moment its prompt is sent until its last ticket settled, so
//!   the spinner shows at once, never after a silent wait for the first token.
//! - Esc and Ctrl-C reach the turn whatever else is open: a question never blocks them.
//! - A prompt is shown when it is sent (queued, when it steers a running turn, until the
//!   model sees it); the log's copy of it is then not shown a second time.

mod draw;
mod keys;
mod slash;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::KeyEvent;
use dsh_agent::commands::Commands;
use dsh_agent::{ConfigChange, MessageSource, TurnOutcome, UserMessage};
use dsh_session::TurnEndReason;
use dsh_tools::safe_text::SafeText;
use dsh_view::{Shown, Tally, ViewEvent};
use ratatui::style::Color;
use ratatui::text::Line;

use crate::composer::Composer;
use crate::gate::{Answer, Question};
use crate::menu::{Entry, Menu};
use crate::question::{self, Asking};
use crate::status::Status;
use crate::transcript::{Palette, Transcript, prompt_lines};

/// Something that happened, for the app to take.
#[derive(Debug)]
pub enum Input {
    /// A key was pressed.
    Key(KeyEvent),
    /// Text was pasted (bracketed paste).
    Paste(String),
    /// The session showed these; `tally` is the usage after them, when it changed.
    View {
        /// The view events, in order.
        events: Vec<ViewEvent>,
        /// The session's usage after them.
        tally: Option<Tally>,
    },
    /// A gated call waits for the user.
    Asked(Question),
    /// A ticket of a prompt, a steer or a compaction resolved.
    Settled(TurnOutcome),
    /// The server's models, for `/model`.
    Models(Vec<String>),
    /// This directory's sessions, for `/resume`.
    Sessions(Vec<Entry>),
    /// The project's files, for `@` completion.
    Files(Vec<String>),
    /// A line of dsh's own to show (safe text): a notice, an error.
    Notice(String),
    /// A model request failed and is retried: what the spinner says until it answers.
    Retrying(String),
    /// Another session is now shown (`/new`, `/resume`): its model and mode.
    Switched {
        /// What the status line says now.
        status: Status,
    },
}

/// What the app asks of the driver.
#[derive(Debug)]
pub enum Effect {
    /// Send a prompt: a turn of its own.
    Send(UserMessage),
    /// Steer the running turn with a message.
    Steer(UserMessage),
    /// Cancel the turn (cause `user`).
    Cancel,
    /// Compact the session.
    Compact,
    /// Change a setting of the session.
    Configure(ConfigChange),
    /// Answer a question.
    Answer(Question, Answer),
    /// Keep a prompt in the project's history.
    Remember(String),
    /// Fetch the server's models.
    ListModels,
    /// Fetch this directory's sessions.
    ListSessions,
    /// List the project's files.
    ListFiles,
    /// Open a new session.
    NewSession,
    /// Open a stored session.
    Resume(String),
    /// End the program (a running turn is cancelled first).
    Quit,
}

/// What a picker chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// A model.
    Model,
    /// A reasoning level.
    Reasoning,
    /// A permission mode.
    Mode,
    /// A session to resume.
    Session,
}

/// The list open under the composer.
#[derive(Debug)]
enum Popup {
    /// The slash commands, filtered by what follows `/`.
    Commands(Menu),
    /// Paths under the project, for the `@` word at the cursor.
    Paths(Menu),
    /// A picker, filtered by what is typed into it.
    Picker(Pick, Menu),
}

/// A running turn.
#[derive(Debug)]
struct Turn {
    since: Instant,
    /// What it waits for, in words (safe).
    doing: String,
    /// Tickets not yet settled.
    tickets: usize,
}

/// The interactive session.
pub struct App {
    composer: Composer,
    transcript: Transcript,
    palette: Palette,
    status: Status,
    /// The front end's commands and the session's (built-in and the user's).
    commands: Commands,
    root: PathBuf,
    files: Option<Vec<String>>,
    popup: Option<Popup>,
    asking: Option<Asking>,
    turn: Option<Turn>,
    /// Steers the model has not seen yet: the log's text, and what was shown.
    queued: VecDeque<(String, String)>,
    /// Prompts shown when they were sent, whose copy from the log is skipped.
    echoed: VecDeque<String>,
    last_interrupt: Option<Instant>,
    /// One line under the composer (a hint such as "Ctrl-C again to quit").
    hint: Option<String>,
    /// Lines for the terminal's scrollback, oldest first.
    scrollback: Vec<Line<'static>>,
    tally: Tally,
    quit: bool,
    /// What to say when the server refuses the key (safe text).
    auth_hint: Option<String>,
}

/// What a first Ctrl-C with nothing to cancel says.
const QUIT_HINT: &str = "Ctrl-C again to quit (or Ctrl-D)";

/// The most characters of a call's title the spinner says.
const DOING_CHARS: usize = 48;

/// The words a view event gives the spinner, when it changes what the turn waits for.
fn doing(shown: &Shown) -> Option<String> {
    match shown {
        Shown::TurnStarted { .. } | Shown::StepStarted { .. } | Shown::CallClosed(_) => {
            Some("waiting for the model".into())
        }
        Shown::Reasoning(_) => Some("thinking".into()),
        Shown::Text(_) => Some("writing".into()),
        Shown::ModelProgress(_) => Some("writing a tool call".into()),
        Shown::CallOpened(card) => {
            let first = card.title.lines().next().unwrap_or_default();
            let mut shown: String = first.chars().take(DOING_CHARS).collect();
            if shown.len() < card.title.len() {
                shown.push('…');
            }
            Some(shown)
        }
        Shown::Compacting(_) => Some("compacting the conversation".into()),
        Shown::Prompt { .. }
        | Shown::Title(_)
        | Shown::Answered(_)
        | Shown::CallOutput { .. }
        | Shown::Plan { .. }
        | Shown::Compacted(_)
        | Shown::Warnings(_)
        | Shown::Subagent(_)
        | Shown::HookRan(_)
        | Shown::TurnEnded { .. } => None,
    }
}

impl App {
    /// An app over `composer` (with the project's history), for a session in `root`.
    pub fn new(
        composer: Composer,
        palette: Palette,
        status: Status,
        commands: Commands,
        root: PathBuf,
    ) -> App {
        App {
            composer,
            transcript: Transcript::new(palette),
            palette,
            status,
            commands,
            root,
            files: None,
            popup: None,
            asking: None,
            turn: None,
            queued: VecDeque::new(),
            echoed: VecDeque::new(),
            last_interrupt: None,
            hint: None,
            scrollback: Vec::new(),
            tally: Tally::default(),
            quit: false,
            auth_hint: None,
        }
    }

    /// What to say when the server refuses the key: where the key is read from.
    pub fn with_auth_hint(mut self, hint: String) -> App {
        self.auth_hint = Some(SafeText::plain(&hint));
        self
    }

    /// Takes one input at `now`; the effects to carry out, in order.
    pub fn input(&mut self, input: Input, now: Instant) -> Vec<Effect> {
        let mut effects = Vec::new();
        match input {
            Input::Key(key) => self.key(key, now, &mut effects),
            Input::Paste(text) => {
                self.hint = None;
                match &mut self.asking {
                    Some(Asking {
                        reason: Some(reason),
                        ..
                    }) => reason.push_str(&SafeText::plain(&text.replace('\n', " "))),
                    Some(_) => {}
                    None => {
                        self.composer.apply(crate::composer::Edit::Paste(text));
                        self.follow_cursor(&mut effects);
                    }
                }
            }
            Input::View { events, tally } => {
                for event in events {
                    self.show(event.shown);
                }
                if let Some(tally) = tally {
                    self.status.context = tally.context.map(|c| (c.used, c.window));
                    self.status.cost = tally
                        .prices
                        .as_ref()
                        .map(|p| (tally.spent, p.currency.clone()));
                    self.tally = tally;
                }
            }
            Input::Asked(asked) => {
                self.popup = None;
                self.scrollback.extend(question::body(self.palette, &asked));
                self.asking = Some(Asking {
                    question: asked,
                    reason: None,
                });
            }
            Input::Settled(outcome) => self.settled(outcome),
            Input::Models(models) => {
                let current = self.status.model.clone();
                let entries = models
                    .into_iter()
                    .map(|m| {
                        let note = if m == current { "current" } else { "" };
                        Entry::plain(SafeText::plain(&m), note)
                    })
                    .collect();
                self.popup = Some(Popup::Picker(Pick::Model, Menu::new(entries)));
            }
            Input::Sessions(sessions) => match sessions.is_empty() {
                true => self.say("no other session was started in this directory"),
                false => self.popup = Some(Popup::Picker(Pick::Session, Menu::new(sessions))),
            },
            Input::Files(files) => {
                self.files = Some(files);
                self.follow_cursor(&mut effects);
            }
            Input::Notice(line) => self.say(&line),
            Input::Retrying(line) => {
                if let Some(turn) = &mut self.turn {
                    turn.doing = SafeText::plain(&line);
                }
            }
            Input::Switched { status } => {
                self.status = status;
                self.transcript = Transcript::new(self.palette);
                self.tally = Tally::default();
                self.queued.clear();
                self.echoed.clear();
            }
        }
        self.collect();
        effects
    }

    /// Lines finished since the last call, for the scrollback.
    pub fn take_scrollback(&mut self) -> Vec<Line<'static>> {
        self.collect();
        std::mem::take(&mut self.scrollback)
    }

    /// Lines of a resumed session's past, for the scrollback.
    pub(crate) fn replayed(&mut self, lines: Vec<Line<'static>>) {
        self.scrollback.extend(lines);
    }

    /// Whether the user asked to quit.
    pub fn quitting(&self) -> bool {
        self.quit
    }

    /// Whether a turn runs: the spinner turns, and frames are drawn on ticks.
    pub fn running(&self) -> bool {
        self.turn.is_some()
    }

    /// A line of dsh's own words (safe) for the scrollback.
    fn say(&mut self, line: &str) {
        self.collect();
        self.scrollback
            .push(Line::styled(line.to_owned(), self.palette.dim()));
    }

    /// An error in dsh's own words (safe) for the scrollback.
    fn error(&mut self, line: &str) {
        self.collect();
        self.scrollback
            .push(Line::styled(line.to_owned(), self.palette.fg(Color::Red)));
    }

    fn collect(&mut self) {
        let finished = self.transcript.take_finished();
        self.scrollback.extend(finished);
    }

    fn show(&mut self, shown: Shown) {
        if let Some(turn) = &mut self.turn
            && let Some(doing) = doing(&shown)
        {
            turn.doing = doing;
        }
        if let Shown::Prompt {
            text,
            source: MessageSource::User,
        } = &shown
        {
            if let Some(at) = self.echoed.iter().position(|e| e == text) {
                self.echoed.remove(at);
                return;
            }
            if let Some(at) = self.queued.iter().position(|(full, _)| full == text) {
                if let Some((_, display)) = self.queued.remove(at) {
                    self.collect();
                    self.scrollback.extend(prompt_lines(&display));
                }
                return;
            }
        }
        self.transcript.show(shown);
    }

    fn settled(&mut self, outcome: TurnOutcome) {
        match &outcome {
            TurnOutcome::Failed { failure } => {
                let line = format!(
                    "error: {} ({})",
                    SafeText::plain(&failure.message),
                    SafeText::plain(&failure.code)
                );
                self.error(&line);
            }
            // The transcript said why the turn ended; a refused key also says what to do.
            TurnOutcome::Ended {
                reason: TurnEndReason::Error { failure },
                ..
            } if failure.code == "auth" => {
                if let Some(hint) = self.auth_hint.clone() {
                    self.say(&hint);
                }
            }
            TurnOutcome::Ended { .. } | TurnOutcome::Discarded { .. } => {}
        }
        if let Some(turn) = &mut self.turn {
            turn.tickets = turn.tickets.saturating_sub(1);
            if turn.tickets == 0 {
                self.turn = None;
                self.asking = None;
                // A Ctrl-C that cancelled the turn still counts: a second one quits.
                if self.hint.is_some() && self.last_interrupt.is_some() {
                    self.hint = Some(QUIT_HINT.into());
                }
                // Steers the model never saw were not sent to it: say so, keep their text.
                for (_, display) in std::mem::take(&mut self.queued) {
                    let line = format!("not sent (the turn ended first): {display}");
                    self.say(&line);
                }
            }
        }
    }

    /// A turn begins, or one more ticket joins the running one.
    fn ticket(&mut self, now: Instant) {
        match &mut self.turn {
            Some(turn) => turn.tickets += 1,
            None => {
                self.turn = Some(Turn {
                    since: now,
                    doing: "waiting for the model".into(),
                    tickets: 1,
                });
            }
        }
    }

    /// Sends `text` as the user typed it: as a prompt, or as steering while a turn runs.
    fn send(&mut self, typed: &str, text: &str, now: Instant, effects: &mut Vec<Effect>) {
        let attached = crate::attach::attach(text, &self.root);
        for skipped in &attached.skipped {
            self.say(skipped);
        }
        let full = SafeText::plain(&attached.message.text);
        let mut display = SafeText::plain(typed);
        for file in &attached.files {
            display.push_str(&format!("\n  ↳ attached {}", SafeText::plain(file)));
        }
        match self.turn.is_some() {
            true => {
                self.queued.push_back((full, display));
                effects.push(Effect::Steer(attached.message));
            }
            false => {
                self.collect();
                self.scrollback.extend(prompt_lines(&display));
                self.echoed.push_back(full);
                effects.push(Effect::Send(attached.message));
            }
        }
        self.ticket(now);
    }

    /// A line says the popup's state changed with the composer: the slash menu while the
    /// composer holds a command name, the path list while the cursor is in an `@` word.
    fn follow_cursor(&mut self, effects: &mut Vec<Effect>) {
        if matches!(self.popup, Some(Popup::Picker(..))) {
            return;
        }
        let lines = self.composer.lines();
        let (row, col) = self.composer.cursor();
        if lines.len() == 1
            && let Some(name) = lines[0].strip_prefix('/')
            && !name.contains(char::is_whitespace)
        {
            let mut menu = match self.popup.take() {
                Some(Popup::Commands(menu)) => menu,
                Some(Popup::Paths(_) | Popup::Picker(..)) | None => Menu::new(self.menu_entries()),
            };
            menu.filter(name);
            self.popup = (!menu.is_empty()).then_some(Popup::Commands(menu));
            return;
        }
        if let Some((_, word)) = crate::attach::at_word(&lines[row], col) {
            let Some(files) = &self.files else {
                effects.push(Effect::ListFiles);
                self.files = Some(Vec::new());
                return;
            };
            let mut menu = match self.popup.take() {
                Some(Popup::Paths(menu)) => menu,
                Some(Popup::Commands(_) | Popup::Picker(..)) | None => Menu::new(
                    files
                        .iter()
                        .map(|f| Entry::plain(SafeText::plain(f), ""))
                        .collect(),
                ),
            };
            menu.filter(&word);
            self.popup = (!menu.is_empty()).then_some(Popup::Paths(menu));
            return;
        }
        self.popup = None;
    }
}
