//! The only code that touches the terminal: raw mode, bracketed paste, the inline viewport
//! and the lines written above it into the terminal's own scrollback.
//!
//! ratatui anchors an inline viewport where the cursor is and keeps its height; dsh's
//! viewport grows and shrinks with what is live (a question, a tall prompt), so the terminal
//! is rebuilt at the same top whenever the height changes. ratatui finds the top by asking
//! the terminal for the cursor (a round trip only the keyboard thread may make), so the
//! backend answers from the position it last set: asked once, at the start, before the
//! keyboard thread exists. The backend also reports the size the viewport was built for, so
//! a resize is handled by the loop, never by ratatui in the middle of a frame.
//!
//! The [`Screen`] restores the terminal when dropped, which also runs on a panic's unwind;
//! a panic hook leaves raw mode first so its message is readable.

use std::io::{self, Stdout, Write};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::{execute, terminal};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget, Wrap};
use ratatui::{Terminal, TerminalOptions, Viewport};

/// The terminal: this module is the one place of the crate that writes to it.
#[allow(clippy::disallowed_methods)]
fn stdout() -> Stdout {
    io::stdout()
}

/// The crossterm backend, with the cursor answered from where it was last put, and the
/// size the viewport was built for: ratatui never sees the terminal change size under it.
/// (On its own it would find out in the middle of a frame, and on a narrower screen it
/// clears the whole screen, the visible transcript with it.) A resize is the loop's to
/// handle, once the terminal said where its cursor went.
struct Tracked {
    inner: CrosstermBackend<Stdout>,
    cursor: Position,
    size: Size,
}

impl Backend for Tracked {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(self.cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        self.cursor = position;
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        Ok(self.size)
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_up(region, n)
    }

    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_down(region, n)
    }
}

/// The terminal in raw mode with an inline viewport at the bottom of what was written.
pub struct Screen {
    terminal: Terminal<Tracked>,
    height: u16,
    restored: bool,
    /// The last frame: its width, and how wide each of its rows above the cursor's was
    /// drawn (what a terminal that rewraps lines on a resize rewraps).
    drawn: (u16, Vec<u16>),
}

impl Screen {
    /// Takes the terminal: raw mode, bracketed paste, the keyboard protocol that tells
    /// Shift+Enter apart where the terminal has it, and a one-row viewport at the cursor.
    pub fn open() -> io::Result<Screen> {
        terminal::enable_raw_mode()?;
        install_panic_hook();
        let mut out = stdout();
        execute!(out, EnableBracketedPaste)?;
        let _ = execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        );
        let (_, rows) = terminal::size()?;
        // Asked once, while nothing else reads the keyboard; a terminal that does not
        // answer gets the viewport at its bottom.
        let cursor = crossterm::cursor::position()
            .map(|(x, y)| Position::new(x, y))
            .unwrap_or(Position::new(0, rows.saturating_sub(1)));
        // The viewport starts on a line of its own.
        let start = match cursor.x {
            0 => cursor,
            _ => {
                write!(out, "\r\n")?;
                Position::new(0, (cursor.y + 1).min(rows.saturating_sub(1)))
            }
        };
        let terminal = build(start, 1)?;
        Ok(Screen {
            terminal,
            height: 1,
            restored: false,
            drawn: (0, Vec::new()),
        })
    }

    /// The terminal's size: columns, rows.
    pub fn size(&self) -> io::Result<(u16, u16)> {
        terminal::size()
    }

    /// Whether the terminal changed size since the viewport was built: nothing is drawn
    /// until the resize was handled, so no frame is laid out for a width that is gone.
    pub fn resize_pending(&self) -> io::Result<bool> {
        let built = self.terminal.backend().size;
        Ok(self.size()? != (built.width, built.height))
    }

    /// The viewport's top row.
    fn top(&mut self) -> u16 {
        self.terminal.get_frame().area().y
    }

    /// Makes the viewport `height` rows tall, at the same top (moved up when the screen has
    /// no room below).
    pub fn set_height(&mut self, height: u16) -> io::Result<()> {
        if height == self.height {
            return Ok(());
        }
        let top = self.top();
        self.rebuild(top, height)
    }

    fn rebuild(&mut self, top: u16, height: u16) -> io::Result<()> {
        let backend = self.terminal.backend_mut();
        backend.set_cursor_position(Position::new(0, top))?;
        backend.clear_region(ClearType::AfterCursor)?;
        self.terminal = build(Position::new(0, top), height)?;
        self.height = height;
        Ok(())
    }

    /// The terminal was resized: the viewport is found again and rebuilt there, so the
    /// next frame lays out for the new size.
    ///
    /// A terminal may rewrap its lines on a resize, pull its history back onto a taller
    /// screen or push lines into it, and the cursor moves with them; so `cursor` is where
    /// the terminal said its cursor is after the resize, and the viewport's top is the
    /// cursor's row less the rows of the frame above it. On a narrower screen, a terminal
    /// that rewraps turned each of those rows wider than the screen into several, and the
    /// top goes up by as many, so no piece of the old frame is left above the new one.
    pub fn resized(&mut self, cursor: Option<(u16, u16)>) -> io::Result<()> {
        let (width, rows) = self.size()?;
        let old_top = self.top();
        let offset = self.terminal.backend().cursor.y.saturating_sub(old_top);
        let top = match cursor {
            Some((_, row)) => {
                let (drawn_width, above) = &self.drawn;
                let rewrapped: u16 = match width < *drawn_width && rewraps() {
                    true => above
                        .iter()
                        .map(|&len| len.saturating_sub(1) / width.max(1))
                        .sum(),
                    false => 0,
                };
                tracing::debug!(row, offset, rewrapped, old_top, width, rows, "a resize");
                row.saturating_sub(offset + rewrapped)
            }
            None => {
                tracing::debug!("the cursor was not reported after a resize");
                old_top
            }
        };
        let height = self.height.min(rows.max(1));
        self.rebuild(top.min(rows.saturating_sub(1)), height)
    }

    /// Writes `lines` above the viewport, into the scrollback, wrapped at the width.
    pub fn insert(&mut self, lines: Vec<Line<'static>>) -> io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let (width, _) = self.size()?;
        let paragraph = Paragraph::new(lines).wrap(Wrap { trim: false });
        let rows = u16::try_from(paragraph.line_count(width)).unwrap_or(u16::MAX);
        self.terminal
            .insert_before(rows, |buf| paragraph.render(buf.area, buf))
    }

    /// Draws a frame with `draw`, which returns where the cursor goes (hidden when nowhere).
    pub fn draw(
        &mut self,
        draw: impl FnOnce(Rect, &mut ratatui::buffer::Buffer) -> Option<Position>,
    ) -> io::Result<()> {
        let mut shown = true;
        let mut above = Vec::new();
        let frame = self.terminal.draw(|frame| {
            let area = frame.area();
            let cursor = draw(area, frame.buffer_mut());
            let until = cursor.map_or(area.y, |c| c.y);
            above = (area.y..until)
                .map(|y| drawn_width(frame.buffer_mut(), area, y))
                .collect();
            match cursor {
                Some(cursor) => frame.set_cursor_position(cursor),
                None => shown = false,
            }
        })?;
        self.drawn = (frame.area.width, above);
        let top = frame.area.y;
        if !shown {
            // A hidden cursor is still put where the backend says it is, so that the
            // position a resize starts from is true.
            self.terminal
                .backend_mut()
                .set_cursor_position(Position::new(0, top))?;
            Backend::flush(self.terminal.backend_mut())?;
        }
        Ok(())
    }

    /// Gives the terminal back: the viewport is cleared, so what follows (the shell's prompt,
    /// dsh's last words) comes right after the transcript.
    pub fn restore(&mut self) -> io::Result<()> {
        if self.restored {
            return Ok(());
        }
        self.restored = true;
        let top = self.top();
        let backend = self.terminal.backend_mut();
        backend.set_cursor_position(Position::new(0, top))?;
        backend.clear_region(ClearType::AfterCursor)?;
        backend.show_cursor()?;
        Backend::flush(backend)?;
        leave()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// Whether the terminal rewraps its lines when it gets narrower, as tmux, the VTE
/// terminals (GNOME Terminal, Tilix), kitty, WezTerm, iTerm2, Terminal.app, Alacritty,
/// Konsole, Windows Terminal and xterm.js (VS Code) do; xterm and the Linux console cut
/// them. Only a terminal known to rewrap is treated as one: taken for one, a terminal that
/// cuts would have its last lines above the frame overwritten, while the other mistake only
/// leaves a piece of the old frame.
fn rewraps() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    let program = std::env::var("TERM_PROGRAM").unwrap_or_default();
    [
        "TMUX",
        "VTE_VERSION",
        "KITTY_WINDOW_ID",
        "WEZTERM_EXECUTABLE",
        "ALACRITTY_WINDOW_ID",
        "KONSOLE_VERSION",
        "WT_SESSION",
    ]
    .iter()
    .any(|name| set(name))
        || ["iTerm.app", "Apple_Terminal", "WezTerm", "vscode", "tmux"].contains(&program.as_str())
}

/// How far row `y` of `buf` is drawn: the column after its last cell that is not blank.
fn drawn_width(buf: &ratatui::buffer::Buffer, area: Rect, y: u16) -> u16 {
    (area.x..area.x + area.width)
        .rev()
        .find(|&x| buf.cell((x, y)).is_some_and(|c| c.symbol() != " "))
        .map_or(0, |x| x + 1 - area.x)
}

fn build(cursor: Position, height: u16) -> io::Result<Terminal<Tracked>> {
    let (width, rows) = terminal::size()?;
    let mut backend = Tracked {
        inner: CrosstermBackend::new(stdout()),
        cursor,
        size: Size::new(width, rows),
    };
    backend.inner.set_cursor_position(cursor)?;
    Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Inline(height.max(1)),
        },
    )
}

/// Leaves raw mode and the modes dsh turned on.
fn leave() -> io::Result<()> {
    let mut out = stdout();
    let _ = execute!(out, PopKeyboardEnhancementFlags);
    let _ = execute!(out, DisableBracketedPaste);
    terminal::disable_raw_mode()
}

/// A panic prints its message in a readable terminal: raw mode goes first.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = leave();
        previous(info);
    }));
}
