//! The viewport: the live part of the transcript, queued steers, a question's answers, the
//! spinner, the composer, a list under it and the status line — laid out for a width, as
//! tall as it needs to be and no taller than the terminal allows.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::{App, Popup};
use crate::question;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// The composer shows at most this many rows; the cursor's stay in view.
const COMPOSER_ROWS: usize = 8;

/// The viewport laid out for one width.
struct Layout {
    top: Vec<Line<'static>>,
    /// Rows of the top part once wrapped.
    top_rows: u16,
    composer: Vec<Line<'static>>,
    cursor: (u16, u16),
    popup: Vec<Line<'static>>,
}

impl App {
    /// How many rows the viewport needs at `width`, given `rows` in the terminal.
    pub fn height(&self, width: u16, rows: u16, now: Instant) -> u16 {
        let layout = self.layout(width, now);
        let wanted =
            layout.top_rows + 1 + layout.composer.len() as u16 + layout.popup.len() as u16 + 1;
        wanted.min(rows.saturating_sub(1).max(3))
    }

    /// Draws the viewport into `area`; where the cursor goes.
    pub fn render(&self, area: Rect, buf: &mut Buffer, now: Instant) -> Option<Position> {
        let layout = self.layout(area.width, now);
        let fixed = 1 + layout.composer.len() as u16 + layout.popup.len() as u16 + 1;
        let top_rows = area.height.saturating_sub(fixed).min(layout.top_rows);
        let mut y = area.y;
        if top_rows > 0 {
            // The last rows of the top part, when it is taller than the room left.
            Paragraph::new(layout.top)
                .wrap(Wrap { trim: false })
                .scroll((layout.top_rows - top_rows, 0))
                .render(Rect::new(area.x, y, area.width, top_rows), buf);
            y += top_rows;
        }
        let rule = "─".repeat(usize::from(area.width));
        let bottom = area.y + area.height;
        let mut row = |line: Line<'static>, y: &mut u16| {
            if *y < bottom {
                line.render(Rect::new(area.x, *y, area.width, 1), buf);
                *y += 1;
            }
        };
        row(Line::styled(rule, self.palette.dim()), &mut y);
        let composer_top = y;
        for line in layout.composer {
            row(line, &mut y);
        }
        for line in layout.popup {
            row(line, &mut y);
        }
        if y < bottom {
            let status_y = bottom - 1;
            self.status
                .line(area.width)
                .render(Rect::new(area.x, status_y, area.width, 1), buf);
        }
        let (x, dy) = layout.cursor;
        let cursor_y = composer_top + dy;
        (self.asking.is_none() && cursor_y < bottom).then_some(Position::new(area.x + x, cursor_y))
    }

    fn layout(&self, width: u16, now: Instant) -> Layout {
        let mut top = self.transcript.live(width);
        for (_, display) in &self.queued {
            let first = display.lines().next().unwrap_or_default();
            top.push(Line::styled(
                format!("⧗ queued for the next step: {first}"),
                self.palette.dim(),
            ));
        }
        if let Some(asking) = &self.asking {
            top.extend(question::choices(self.palette, asking));
        }
        if let Some(turn) = &self.turn {
            let elapsed = now.saturating_duration_since(turn.since);
            let frame = SPINNER[(elapsed.as_millis() / 100 % 10) as usize];
            top.push(Line::from(vec![
                Span::styled(format!("{frame} "), self.palette.fg(Color::Cyan)),
                Span::raw(format!("{}s · {}", elapsed.as_secs(), turn.doing)),
                Span::styled(" · esc to interrupt".to_owned(), self.palette.dim()),
            ]));
        }
        if let Some(hint) = &self.hint {
            top.push(Line::styled(hint.clone(), self.palette.fg(Color::Yellow)));
        }
        let top_rows = match top.is_empty() {
            true => 0,
            false => Paragraph::new(top.clone())
                .wrap(Wrap { trim: false })
                .line_count(width)
                .try_into()
                .unwrap_or(u16::MAX),
        };
        let (composer, cursor) = self.composer_rows(width);
        let popup = match &self.popup {
            Some(Popup::Commands(menu) | Popup::Paths(menu)) => menu.lines(width),
            Some(Popup::Picker(pick, menu)) => {
                let mut lines = vec![Line::styled(
                    format!(
                        "  choose {} (type to filter, Enter picks, Esc closes): {}",
                        pick_word(*pick),
                        menu.filter_text()
                    ),
                    Style::new().add_modifier(Modifier::BOLD),
                )];
                lines.extend(menu.lines(width));
                lines
            }
            None => Vec::new(),
        };
        Layout {
            top,
            top_rows,
            composer,
            cursor,
            popup,
        }
    }

    /// The composer's lines wrapped at `width` behind a two-column mark, and the cursor's
    /// place among them.
    fn composer_rows(&self, width: u16) -> (Vec<Line<'static>>, (u16, u16)) {
        let room = usize::from(width.saturating_sub(2)).max(1);
        let (row, col) = self.composer.cursor();
        let mut rows = Vec::new();
        let mut cursor = (2u16, 0u16);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        for (i, line) in self.composer.lines().iter().enumerate() {
            // What was typed or pasted is shown, never obeyed: a control character (an
            // escape in a paste) shows as a replacement mark.
            let chars: Vec<char> = line
                .chars()
                .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                .collect();
            let mut chunks: Vec<String> = chars.chunks(room).map(|c| c.iter().collect()).collect();
            if chunks.is_empty() || (i == row && col == chars.len() && col % room == 0 && col > 0) {
                chunks.push(String::new());
            }
            if i == row {
                let at = (col / room).min(chunks.len() - 1);
                cursor = ((2 + col - at * room) as u16, (rows.len() + at) as u16);
            }
            for (j, chunk) in chunks.into_iter().enumerate() {
                let mark = match (i, j) {
                    (0, 0) => Span::styled("› ".to_owned(), bold),
                    _ => Span::raw("  ".to_owned()),
                };
                rows.push(Line::from(vec![mark, Span::raw(chunk)]));
            }
        }
        // A tall prompt shows the rows around the cursor.
        let first = usize::from(cursor.1).saturating_sub(COMPOSER_ROWS - 1);
        let shown: Vec<Line<'static>> = rows.into_iter().skip(first).take(COMPOSER_ROWS).collect();
        (shown, (cursor.0, cursor.1 - first as u16))
    }
}

fn pick_word(pick: super::Pick) -> &'static str {
    match pick {
        super::Pick::Model => "a model",
        super::Pick::Reasoning => "a reasoning level",
        super::Pick::Mode => "a mode",
        super::Pick::Session => "a session",
    }
}
