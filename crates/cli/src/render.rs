//! Showing a session as it is recorded: a session observer that feeds what the agent appends
//! through the turn view (`dsh-view`) and maps each view event to the terminal
//! ([`human`]: text as it arrives, reasoning dimmed, each command as `$ <command>` with its
//! output and `[exit N · S s]`) or to `--json` lines ([`json`]).
//!
//! Rendering from the session log, not from a side channel, means what is shown is exactly
//! what was stored, and `dsh sessions show` reuses the same view. Nothing here names a tool:
//! how a call looks is the tool's to say.

mod ending;
mod human;

pub use human::Asks;
mod json;
mod live;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_session::SessionId;
use dsh_session::{Ephemeral, Session, SessionEvent, SessionObserver};
use dsh_tools::ToolRegistry;
use dsh_tools::safe_text::SafeText;
use dsh_view::{Family, Projector, Shown, Tally, ViewEvent};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::json_lines::Line;
use crate::status::{StatusLine, Stream};

/// How a run is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Text for people. `color`: SGR dimming of reasoning. `split`: stdout is not a terminal,
    /// so only the answer goes there and the rest to stderr.
    Human { color: bool, split: bool },
    /// One JSON object per line.
    Json,
}

struct State {
    /// Made from the first event seen, or by [`Renderer::follow`]: the renderer follows one
    /// session and the child agents its calls start.
    family: Option<Family>,
    /// Set before the first event.
    window: Option<u64>,
    prices: Option<dsh_llm::Prices>,
    human: human::Human,
    /// The view events of the last record, and what the text view said of the last event:
    /// buffers kept to be filled again, so a long log is shown without an allocation each.
    events: Vec<ViewEvent>,
    said: Vec<human::Said>,
}

/// The observer. `closed` fires when stdout was closed under dsh.
pub struct Renderer {
    view: View,
    /// Replaying a stored transcript: prompts and turn ends are shown too.
    transcript: bool,
    /// Presents the calls.
    tools: Arc<dyn ToolRegistry>,
    state: Mutex<State>,
    pub stdout_closed: AtomicBool,
    pub closed: Notify,
    /// The terminal's status line: what the run waits for (the model, a command) with its
    /// elapsed time, or a retry notice; every write passes through it.
    status: Arc<StatusLine>,
}

impl Renderer {
    pub fn new(view: View, tools: Arc<dyn ToolRegistry>) -> Arc<Renderer> {
        Renderer::build(view, false, tools)
    }

    /// A renderer for a stored transcript (`dsh sessions show`).
    pub fn transcript(color: bool, tools: Arc<dyn ToolRegistry>) -> Arc<Renderer> {
        let view = View::Human {
            color,
            split: false,
        };
        Renderer::build(view, true, tools)
    }

    fn build(view: View, transcript: bool, tools: Arc<dyn ToolRegistry>) -> Arc<Renderer> {
        // Status lines are drawn and redrawn in place only for a person watching a run: a
        // human view, stderr on a terminal that is not `dumb`, and not a stored transcript.
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let in_place = matches!(view, View::Human { .. })
            && !transcript
            && !dumb
            && std::io::stderr().is_terminal();
        let color = matches!(view, View::Human { color: true, .. });
        Arc::new(Renderer {
            view,
            transcript,
            tools,
            state: Mutex::new(State {
                family: None,
                window: None,
                prices: None,
                human: human::Human::new(color, transcript),
                events: Vec::new(),
                said: Vec::new(),
            }),
            stdout_closed: AtomicBool::new(false),
            closed: Notify::new(),
            status: StatusLine::new(in_place, crate::output::is_terminal()),
        })
    }

    /// The agent's context window, for a compaction shown before any model call.
    pub fn set_window(&self, window: u64) {
        let mut state = self.state.lock();
        state.window = Some(window);
        if let Some(family) = &mut state.family {
            family.root_mut().set_window(window);
        }
    }

    /// The model's prices, for the footer's cost.
    pub fn set_prices(&self, prices: Option<dsh_llm::Prices>) {
        let mut state = self.state.lock();
        if let Some(family) = &mut state.family {
            family.root_mut().set_prices(prices.clone());
        }
        state.prices = prices;
    }

    /// What the run's model calls used so far.
    pub fn totals(&self) -> Tally {
        let state = self.state.lock();
        match &state.family {
            Some(family) => family.root().tally().clone(),
            None => Tally {
                window: state.window,
                prices: state.prices.clone(),
                ..Tally::default()
            },
        }
    }

    /// Shows a passing state of the run (`server busy (HTTP 429) — retrying in 3 s …`): on a
    /// terminal one line on stderr that the next one replaces and the next output clears;
    /// elsewhere a plain line.
    pub fn notice(&self, line: &str) {
        let line = format!("dsh · {}", SafeText::plain(line));
        if self.status.enabled() {
            self.status.say(&line);
        } else {
            let _ = self
                .status
                .write(Stream::Stderr, format!("{line}\n").as_bytes());
        }
    }

    /// Says `line` (dsh's own words, safe to show) on stderr, on a line of its own: the
    /// status comes off first and goes back after.
    pub fn interject(&self, line: &str) {
        self.status.break_line();
        let _ = self
            .status
            .write(Stream::Stderr, format!("{line}\n").as_bytes());
    }

    /// Shows the commands `asks` says are asked about as running only once
    /// [`Renderer::allowed`] says so.
    pub fn asking(&self, asks: human::Asks) {
        self.state.lock().human.asks = Some(asks);
    }

    /// The user allowed call `call_id`: it is shown as running now, and its time counts from
    /// now (not from before the question).
    pub fn allowed(&self, call_id: &str) {
        let mut said = self.state.lock().human.allowed(call_id, now_ms());
        self.say(&mut said);
    }

    /// Removes the status (a spinner, a notice) from the terminal before something else is
    /// said there: a question, the end of the run.
    pub fn stop_spinner(&self) {
        self.status.hide();
        self.status.break_line();
    }

    /// Writes to stdout; a closed stdout is remembered and announced once.
    pub fn out(&self, bytes: &[u8]) {
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        if self.status.write(Stream::Stdout, bytes).is_err() {
            self.stdout_closed.store(true, Ordering::SeqCst);
            self.closed.notify_one();
        }
    }

    /// Prints one `--json` line.
    pub fn json_line(&self, line: &Line<'_>) {
        self.out(line.text().as_bytes());
    }

    /// Follows `session` from here on, with the child agents its calls start.
    pub fn follow(&self, session: &SessionId) {
        let mut state = self.state.lock();
        self.family(&mut state, session);
    }

    /// Renders one stored event of the followed session or of one of its children, as the
    /// live observer would have.
    pub fn replay(&self, event: &SessionEvent, session: &SessionId) {
        let mut shown = {
            let mut state = self.state.lock();
            let mut shown = std::mem::take(&mut state.events);
            self.family(&mut state, session)
                .event_into(session, event, &*self.tools, &mut shown);
            shown
        };
        self.show(&mut shown);
        self.state.lock().events = shown;
    }

    /// Shows the child agent whose session has `header` under the card of the call that
    /// started it, when that call is the followed session's (or a followed child's); its
    /// events before `earlier_than` are shown at once. `false`: not one of the family.
    pub fn adopt(
        &self,
        header: &dsh_session::SessionHeader,
        earlier: &[Arc<SessionEvent>],
    ) -> bool {
        let mut shown = Vec::new();
        {
            let mut state = self.state.lock();
            let Some(family) = state.family.as_mut() else {
                return false;
            };
            if !family.adopt(header, &mut shown) {
                return false;
            }
            for event in earlier {
                family.event_into(&header.id, event, &*self.tools, &mut shown);
            }
        }
        self.show(&mut shown);
        true
    }

    fn family<'a>(&self, state: &'a mut State, session: &SessionId) -> &'a mut Family {
        let (window, prices) = (state.window, state.prices.clone());
        state.family.get_or_insert_with(|| {
            let mut projector = Projector::new(session.clone());
            if let Some(window) = window {
                projector.set_window(window);
            }
            projector.set_prices(prices);
            Family::new(projector)
        })
    }

    /// Maps view events to the run's medium, emptying `events`.
    fn show(&self, events: &mut Vec<ViewEvent>) {
        let root = self
            .state
            .lock()
            .family
            .as_ref()
            .map(|family| family.root().session().clone());
        for event in events.drain(..) {
            if root.as_ref().is_some_and(|root| *root != event.session) {
                self.show_child(event);
                continue;
            }
            match self.view {
                View::Human { .. } => {
                    let mut said = {
                        let mut state = self.state.lock();
                        let mut said = std::mem::take(&mut state.said);
                        state
                            .human
                            .show(event.shown, self.status.enabled(), &mut said);
                        said
                    };
                    self.say(&mut said);
                    self.state.lock().said = said;
                }
                View::Json => self.json(&event.shown),
            }
        }
    }

    /// A child agent's event: one line under its card in the text view, a line naming the
    /// child's session in `--json`.
    fn show_child(&self, event: ViewEvent) {
        match self.view {
            View::Human { .. } => {
                let mut said = self.state.lock().human.child(&event);
                self.say(&mut said);
            }
            View::Json => match &event.shown {
                Shown::Subagent(child) => self.json_line(&Line::Subagent {
                    session_id: event.session.as_str(),
                    parent_id: child.parent.as_str(),
                    call_id: &child.call_id,
                    title: &child.label,
                }),
                Shown::Warnings(_) => {}
                shown => json::lines(shown, |line| {
                    self.out(line.text_in(Some(event.session.as_str())).as_bytes())
                }),
            },
        }
    }

    /// Carries out what the human view said: writes, and what the status line shows.
    fn say(&self, said: &mut Vec<human::Said>) {
        for said in said.drain(..) {
            match said {
                human::Said::Out(text) => self.out(text.as_bytes()),
                human::Said::Side(text) => match self.view {
                    View::Human { split: true, .. } => {
                        let _ = self.status.write(Stream::Stderr, text.as_bytes());
                    }
                    View::Human { split: false, .. } | View::Json => self.out(text.as_bytes()),
                },
                human::Said::Warn(text) => warn(&text),
                human::Said::Hide => self.status.hide(),
                human::Said::Spin(label) if !self.transcript => {
                    self.status.spin(&first_line(&label))
                }
                human::Said::Spin(_) => {}
                human::Said::Relabel(label) => self.status.relabel(&label),
            }
        }
    }

    fn json(&self, shown: &Shown) {
        if let Shown::Warnings(warnings) = shown {
            for warning in warnings {
                warn(warning);
            }
            return;
        }
        json::lines(shown, |line| self.json_line(&line));
    }
}

#[async_trait]
impl SessionObserver for Renderer {
    fn name(&self) -> &str {
        "dsh-run-renderer"
    }

    /// A session a followed call started is shown from its first event.
    async fn on_created(
        &self,
        session: &Session,
        published_from: u64,
    ) -> Result<(), dsh_kernel::BoxError> {
        let earlier: Vec<Arc<SessionEvent>> = session
            .events()
            .iter()
            .filter(|event| event.seq < published_from)
            .cloned()
            .collect();
        self.adopt(session.header(), &earlier);
        Ok(())
    }

    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        let followed = self
            .state
            .lock()
            .family
            .as_mut()
            .is_none_or(|family| family.member(session.id()).is_some());
        if followed {
            self.replay(event, session.id());
        }
    }

    fn on_ephemeral(&self, session: &Session, note: &Ephemeral) {
        let mut shown = {
            let mut state = self.state.lock();
            self.family(&mut state, session.id())
                .ephemeral(session.id(), note)
        };
        self.show(&mut shown);
    }
}

/// A warning about dsh's input (a skipped instruction file, a window too small): on stderr
/// in every view, since it is not the model's answer.
fn warn(warning: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "warning: {warning}");
}

/// `parts` joined with ` · `, broken before a part (never inside one) so that no line is
/// wider than `width` columns; a part wider than the line stands alone on its line.
pub fn fit(parts: &[String], width: Option<usize>) -> String {
    let Some(width) = width.filter(|w| *w >= 20) else {
        return parts.join(" · ");
    };
    let mut out = String::new();
    let mut line = 0usize;
    for (i, part) in parts.iter().enumerate() {
        let len = part.chars().count();
        if i > 0 {
            if line + 3 + len > width {
                out.push_str("\n  ");
                line = 2;
            } else {
                out.push_str(" · ");
                line += 3;
            }
        }
        out.push_str(part);
        line += len;
    }
    out
}

/// The width of the terminal stderr is, when it is one.
pub fn stderr_width() -> Option<usize> {
    console::Term::stderr()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
}

/// The first line of `label`, cut to 62 characters with an ellipsis when anything was left
/// out.
fn first_line(label: &str) -> String {
    let first = label.lines().next().unwrap_or_default();
    let mut shown: String = first.chars().take(62).collect();
    if shown.len() < label.trim_end().len() {
        shown.push('…');
    }
    shown
}

/// The time as the log stamps events: milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod fit_tests {
    use super::fit;

    #[test]
    fn parts_wrap_between_never_inside() {
        let parts: Vec<String> = [
            "dsh",
            "completed",
            "3 steps",
            "saved: dsh sessions show 0123456789",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            fit(&parts, None),
            "dsh · completed · 3 steps · saved: dsh sessions show 0123456789"
        );
        let fitted = fit(&parts, Some(30));
        assert_eq!(
            fitted,
            "dsh · completed · 3 steps\n  saved: dsh sessions show 0123456789"
        );
        assert!(fitted.lines().next().unwrap().chars().count() <= 30);
    }
}
