//! The status line: the one line at the bottom of a terminal that says what dsh is waiting
//! for (`⠹ 12s · $ cargo test`, `⠹ 3s · waiting for the model`, a retry notice), redrawn in
//! place and never left behind.
//!
//! Every byte a run writes to the terminal passes [`StatusLine::write`], which clears the
//! line first and draws it again after — but only when the cursor is back at the start of a
//! line. Output that ends mid-line (a prompt, `50%` of a download, the model's sentence so
//! far) is left alone, and the status waits for the line to end: a frame drawn over a partial
//! line is what once stayed in the scrollback. A frame is `\r`, erase-line, then the text,
//! cut to the terminal's width so it never wraps; the cursor stays on that line, so the next
//! write's erase removes it whole.

use std::io::Write;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often the spinner turns.
const TICK: Duration = Duration::from_millis(100);
/// The spinner's frames.
const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Where a write goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What the line says.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shown {
    /// A spinner, the time since `since`, and this text (safe to show).
    Spinner { text: String, since: Instant },
    /// This text alone (safe to show).
    Plain(String),
}

struct State {
    shown: Option<Shown>,
    /// A frame is on the terminal now.
    drawn: bool,
    /// The terminal's cursor is at the start of a line, as far as dsh's writes go.
    at_line_start: bool,
    frame: usize,
    ticking: bool,
}

/// The status line of one run. Drawn only when `enabled` (stderr a terminal that is not
/// `dumb`); otherwise every call but [`StatusLine::write`] does nothing.
pub struct StatusLine {
    enabled: bool,
    /// Whether stdout reaches the same terminal (its writes move the cursor too).
    stdout_on_terminal: bool,
    state: Mutex<State>,
}

impl StatusLine {
    pub fn new(enabled: bool, stdout_on_terminal: bool) -> Arc<StatusLine> {
        Arc::new(StatusLine {
            enabled,
            stdout_on_terminal,
            state: Mutex::new(State {
                shown: None,
                drawn: false,
                at_line_start: true,
                frame: 0,
                ticking: false,
            }),
        })
    }

    /// Whether the status is drawn at all (a person at a terminal watches the run).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Shows a spinner with `text` (safe to show), its time counted from now.
    pub fn spin(self: &Arc<Self>, text: &str) {
        self.show(Shown::Spinner {
            text: text.to_owned(),
            since: Instant::now(),
        });
    }

    /// Changes the spinner's text and keeps its time, or starts one.
    pub fn relabel(self: &Arc<Self>, text: &str) {
        let since = match &self.state.lock().shown {
            Some(Shown::Spinner { since, .. }) => *since,
            Some(Shown::Plain(_)) | None => Instant::now(),
        };
        self.show(Shown::Spinner {
            text: text.to_owned(),
            since,
        });
    }

    /// Shows `text` alone (a retry notice), until the next output or status.
    pub fn say(self: &Arc<Self>, text: &str) {
        self.show(Shown::Plain(text.to_owned()));
    }

    fn show(self: &Arc<Self>, shown: Shown) {
        if !self.enabled {
            return;
        }
        let start_ticking = {
            let mut state = self.state.lock();
            let spinning = matches!(shown, Shown::Spinner { .. });
            state.shown = Some(shown);
            draw(&mut state);
            let start = spinning && !state.ticking;
            state.ticking |= start;
            start
        };
        if start_ticking {
            let me = Arc::downgrade(self);
            std::thread::spawn(move || tick(me));
        }
    }

    /// Removes the status from the terminal.
    pub fn hide(&self) {
        let mut state = self.state.lock();
        state.shown = None;
        erase(&mut state);
    }

    /// Writes `bytes` to `stream` with the status lifted off the terminal, and draws it again
    /// if the output ended its line. Returns the write's result.
    pub fn write(&self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        let mut state = self.state.lock();
        erase(&mut state);
        let result = match stream {
            Stream::Stdout => crate::output::write(bytes),
            Stream::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes).and_then(|()| err.flush())
            }
        };
        let moves_cursor = stream == Stream::Stderr || self.stdout_on_terminal;
        if moves_cursor && let Some(last) = bytes.last() {
            state.at_line_start = *last == b'\n';
        }
        draw(&mut state);
        result
    }

    /// Ends a partial line with a newline, so what follows (a question) starts a line.
    pub fn break_line(&self) {
        let at_start = self.state.lock().at_line_start;
        if !at_start {
            let _ = self.write(Stream::Stderr, b"\n");
        }
    }
}

/// Draws the status when there is one and the cursor is at the start of a line.
fn draw(state: &mut State) {
    let Some(shown) = &state.shown else {
        return;
    };
    if !state.at_line_start {
        return;
    }
    let text = match shown {
        Shown::Spinner { text, since } => format!(
            "{} {} · {text}",
            FRAMES[state.frame % FRAMES.len()],
            elapsed(since.elapsed())
        ),
        Shown::Plain(text) => text.clone(),
    };
    // Never as wide as the terminal: a full line would leave the cursor waiting to wrap, and
    // the next erase would miss it.
    let width = crate::render::stderr_width().unwrap_or(80).max(2) - 1;
    let line: String = text.chars().take(width).collect();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{line}").and_then(|()| err.flush());
    state.drawn = true;
}

/// Takes a drawn frame off the terminal.
fn erase(state: &mut State) {
    if std::mem::take(&mut state.drawn) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(b"\r\x1b[2K").and_then(|()| err.flush());
    }
}

/// Turns the spinner while the line lives and shows a spinner.
fn tick(line: Weak<StatusLine>) {
    loop {
        std::thread::sleep(TICK);
        let Some(line) = line.upgrade() else {
            return;
        };
        let mut state = line.state.lock();
        match &state.shown {
            Some(Shown::Spinner { .. }) => {
                state.frame = state.frame.wrapping_add(1);
                draw(&mut state);
            }
            Some(Shown::Plain(_)) | None => {
                state.ticking = false;
                return;
            }
        }
    }
}

/// `12s`, `3m 05s`.
fn elapsed(time: Duration) -> String {
    let secs = time.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        _ => format!("{}m {:02}s", secs / 60, secs % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_time_reads_as_seconds_then_minutes() {
        assert_eq!(elapsed(Duration::from_millis(12_400)), "12s");
        assert_eq!(elapsed(Duration::from_secs(185)), "3m 05s");
    }
}
