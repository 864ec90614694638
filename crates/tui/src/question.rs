//! A permission question as the terminal shows it: the call in the tool's own rendering (the
//! command, an edit's diff) goes to the scrollback, and the three answers stay in the
//! viewport until one is given.

use dsh_tools::safe_text::SafeText;
use dsh_tools::{ToolCallView, ToolResultView};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::gate::Question;
use crate::transcript::{Palette, diff_lines};

/// The most characters of a call's arguments a question quotes.
const QUOTED: usize = 400;

/// The question being asked, and the reason being typed after "no".
#[derive(Debug)]
pub struct Asking {
    /// The question.
    pub question: Question,
    /// `Some` once the user answered `n`: the reason typed so far.
    pub reason: Option<String>,
}

/// The call the question is about, for the scrollback.
pub fn body(palette: Palette, question: &Question) -> Vec<Line<'static>> {
    let request = &question.request;
    let tool = SafeText::plain(&request.tool);
    let mark = Span::styled("? ".to_owned(), palette.fg(Color::Yellow));
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut lines = Vec::new();
    // A subagent's call says whose it is: the person answers for a child they did not start.
    if let Some(label) = &request.subagent {
        let said = format!("subagent \u{201c}{}\u{201d} asks:", SafeText::plain(label));
        lines.push(Line::styled(said, palette.fg(Color::Yellow)));
    }
    match (&request.shown, &request.preview) {
        (
            Some(ToolCallView::Terminal {
                command,
                description,
                ..
            }),
            _,
        ) => {
            let command = SafeText::plain(command);
            let mut shown = command.lines();
            lines.push(Line::from(vec![
                mark,
                Span::styled(format!("{tool} wants to run "), bold),
                Span::raw(format!("$ {}", shown.next().unwrap_or_default())),
            ]));
            lines.extend(shown.map(|l| Line::raw(format!("    {l}"))));
            if let Some(description) = description {
                let said = format!("  {}", SafeText::plain(description));
                lines.push(Line::styled(said, palette.fg(Color::Yellow)));
            }
        }
        (
            _,
            Some(ToolResultView::Diff {
                summary,
                old_text,
                new_text,
                first_line,
                ..
            }),
        ) => {
            lines.push(Line::from(vec![
                mark,
                Span::styled(format!("{tool} · "), bold),
                Span::raw(SafeText::plain(summary)),
            ]));
            lines.extend(diff_lines(
                palette,
                old_text,
                new_text,
                *first_line as usize,
            ));
        }
        (Some(ToolCallView::Generic { summary, .. }), _) => {
            let what = match summary {
                Some(summary) => SafeText::plain(summary),
                None => quoted(&request.arguments),
            };
            lines.push(Line::from(vec![
                mark,
                Span::styled(format!("{tool} wants to run with "), bold),
                Span::raw(what),
            ]));
        }
        (None, _) => lines.push(Line::from(vec![
            mark,
            Span::styled(format!("{tool} wants to run with "), bold),
            Span::raw(quoted(&request.arguments)),
        ])),
    }
    lines
}

/// The arguments as JSON, safe and cut.
fn quoted(arguments: &serde_json::Value) -> String {
    let text = arguments.to_string();
    let mut shown: String = text.chars().take(QUOTED).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    SafeText::plain(&shown)
}

/// The answers, or the reason being typed, for the viewport.
pub fn choices(palette: Palette, asking: &Asking) -> Vec<Line<'static>> {
    let key = |k: &str| Span::styled(k.to_owned(), Style::new().add_modifier(Modifier::BOLD));
    let dim = palette.dim();
    match &asking.reason {
        None => vec![
            Line::from(match &asking.question.grant {
                Some(grant) => vec![
                    Span::raw("  "),
                    key("y"),
                    Span::raw(" yes   "),
                    key("a"),
                    Span::raw(" yes, always here: "),
                    Span::raw(SafeText::plain(&grant.describe())),
                ],
                None => vec![Span::raw("  "), key("y"), Span::raw(" yes, this once")],
            }),
            Line::from(vec![
                Span::raw("  "),
                key("n"),
                Span::raw(" no, and say why   "),
                Span::styled("esc cancels the turn".to_owned(), dim),
            ]),
        ],
        Some(reason) => vec![
            Line::styled(
                "  Why not? The model reads this (Enter sends, empty for no reason):".to_owned(),
                dim,
            ),
            Line::from(vec![key("  ✗ "), Span::raw(reason.clone())]),
        ],
    }
}
