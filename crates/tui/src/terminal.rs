//! The only code that touches the terminal: raw mode, bracketed paste, the inline viewport
//! and the lines written above it into the terminal's own scrollback.
//!
//! ratatui anchors an inline viewport where the cursor is and keeps its height; dsh's
//! viewport grows and shrinks with what is live (a question, a tall prompt), so the terminal
//! is rebuilt at the same top whenever the height changes. ratatui finds the top by asking
//! the terminal for the cursor (a round trip that cannot share the keyboard with the async
//! event stream), so the backend answers from the position it last set: asked once, at the
//! start, before the event stream exists.
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

/// The crossterm backend, with the cursor answered from where it was last put.
struct Tracked {
    inner: CrosstermBackend<Stdout>,
    cursor: Position,
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
        self.inner.size()
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
        })
    }

    /// The terminal's size: columns, rows.
    pub fn size(&self) -> io::Result<(u16, u16)> {
        let size = self.terminal.backend().size()?;
        Ok((size.width, size.height))
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

    /// The terminal was resized: what the viewport showed is cleared and it is rebuilt, so
    /// the next frame lays out for the new width. Lines already in the scrollback stay.
    pub fn resized(&mut self) -> io::Result<()> {
        let (_, rows) = self.size()?;
        let top = self.top().min(rows.saturating_sub(1));
        let height = self.height.min(rows.max(1));
        self.rebuild(top, height)
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
        self.terminal.draw(|frame| {
            let area = frame.area();
            if let Some(cursor) = draw(area, frame.buffer_mut()) {
                frame.set_cursor_position(cursor);
            }
        })?;
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

fn build(cursor: Position, height: u16) -> io::Result<Terminal<Tracked>> {
    let backend = Tracked {
        inner: CrosstermBackend::new(stdout()),
        cursor,
    };
    let mut backend = backend;
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
