//! The status line under the composer: where the session works, with what, and how full its
//! context is. It is fitted to the terminal's width by leaving out the parts that matter
//! least, never by cutting one in the middle.

use dsh_tools::words::tokens;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// What the status line says. Every text is dsh's own or already safe.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// The session's directory, shortened (`~/src/dsh`).
    pub dir: String,
    /// The git branch, when the directory is in a repository.
    pub branch: Option<String>,
    /// The model the next request goes to.
    pub model: String,
    /// The reasoning level, when it is not the server's default.
    pub reasoning: Option<String>,
    /// The permission mode (`ask`, `accept-edits`, `allow`).
    pub mode: String,
    /// The context used and the window, in tokens, once a model call reported them.
    pub context: Option<(u64, u64)>,
    /// The session's cost and its currency, when prices are configured.
    pub cost: Option<(f64, String)>,
}

/// The parts in the order they are shown, each with how much it matters (the lowest go
/// first when the line is too narrow).
fn parts(status: &Status) -> Vec<(u8, String)> {
    let mut parts = vec![(3, status.dir.clone())];
    if let Some(branch) = &status.branch {
        parts.push((1, format!("⎇ {branch}")));
    }
    parts.push((5, status.model.clone()));
    if let Some(reasoning) = &status.reasoning {
        parts.push((2, format!("reasoning {reasoning}")));
    }
    parts.push((4, status.mode.clone()));
    if let Some((used, window)) = status.context {
        let share = used.saturating_mul(100) / window.max(1);
        parts.push((6, format!("{}/{} ({share}%)", tokens(used), tokens(window))));
    }
    if let Some((spent, currency)) = &status.cost {
        parts.push((2, format!("{spent:.2} {currency}")));
    }
    parts
}

impl Status {
    /// The line for `width` columns: the parts joined by ` · `, the least important left
    /// out until the line fits (a part wider than the line alone is cut at its end).
    pub fn line(&self, width: u16) -> Line<'static> {
        let width = usize::from(width);
        let mut parts = parts(self);
        let len = |parts: &[(u8, String)]| {
            parts.iter().map(|(_, p)| p.chars().count()).sum::<usize>()
                + 3 * parts.len().saturating_sub(1)
        };
        while len(&parts) > width && parts.len() > 1 {
            // The least important, the latest of equals: it goes first.
            let (at, _) = parts
                .iter()
                .enumerate()
                .rev()
                .min_by_key(|(_, (weight, _))| *weight)
                .unwrap_or((0, &parts[0]));
            parts.remove(at);
        }
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut spans = Vec::new();
        for (i, (_, part)) in parts.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ".to_owned(), dim));
            }
            let part = match part.chars().count() > width {
                true => {
                    part.chars()
                        .take(width.saturating_sub(1))
                        .collect::<String>()
                        + "…"
                }
                false => part,
            };
            spans.push(Span::styled(part, dim));
        }
        Line::from(spans)
    }
}

impl Widget for &Status {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.line(area.width).render(area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn full() -> Status {
        Status {
            dir: "~/src/dsh".into(),
            branch: Some("main".into()),
            model: "deepseek-v4-pro".into(),
            reasoning: Some("high".into()),
            mode: "accept-edits".into(),
            context: Some((61_200, 1_000_000)),
            cost: Some((0.0421, "USD".into())),
        }
    }

    fn drawn(status: &Status, width: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, 1)).unwrap();
        terminal
            .draw(|frame| frame.render_widget(status, frame.area()))
            .unwrap();
        terminal.backend().to_string()
    }

    #[test]
    fn the_status_line_at_120_and_40_columns() {
        insta::assert_snapshot!("status_120", drawn(&full(), 120));
        insta::assert_snapshot!("status_40", drawn(&full(), 40));
        let fresh = Status {
            dir: "~/p".into(),
            model: "m".into(),
            mode: "ask".into(),
            ..Status::default()
        };
        insta::assert_snapshot!("status_fresh_40", drawn(&fresh, 40));
    }

    #[test]
    fn parts_are_left_out_least_important_first_never_cut() {
        let line = |width| {
            full()
                .line(width)
                .spans
                .iter()
                .map(|s| s.content.to_string())
                .collect::<String>()
        };
        assert_eq!(
            line(200),
            "~/src/dsh · ⎇ main · deepseek-v4-pro · reasoning high · accept-edits · 61.2k/1M (6%) · 0.04 USD"
        );
        assert_eq!(line(40), "deepseek-v4-pro · 61.2k/1M (6%)");
        assert_eq!(line(10), "61.2k/1M …");
    }
}
