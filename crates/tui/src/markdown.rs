//! The model's Markdown as styled lines, one finished line at a time, as the answer streams.
//!
//! Blocks are told apart by their first characters (headings, list items, quotes, fences),
//! which a streamed line always has when it is finished; what is inside a line (emphasis,
//! strong, inline code, links) is parsed by `pulldown-cmark`. A fence's lines are code, kept
//! as written.

use pulldown_cmark::{Event, Options, Parser, Tag};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

/// The block state a stream of lines carries from one line to the next.
#[derive(Debug, Default)]
pub struct Markdown {
    /// Inside a fenced code block, with its language (possibly empty).
    fence: Option<String>,
}

impl Markdown {
    /// One finished line of the answer (safe text, no newline), styled.
    pub fn line(&mut self, text: &str) -> Line<'static> {
        let trimmed = text.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            return match self.fence.take() {
                Some(_) => Line::styled(text.to_owned(), dim()),
                None => {
                    self.fence = Some(rest.trim().to_owned());
                    Line::styled(text.to_owned(), dim())
                }
            };
        }
        if self.fence.is_some() {
            return Line::styled(text.to_owned(), Style::new().add_modifier(Modifier::DIM));
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let bold = Style::new().add_modifier(Modifier::BOLD);
            return Line::from(inline(trimmed[hashes..].trim_start(), bold));
        }
        let indent = &text[..text.len() - trimmed.len()];
        for bullet in ["- ", "* ", "+ "] {
            if let Some(item) = trimmed.strip_prefix(bullet) {
                let mut spans = vec![Span::raw(format!("{indent}• "))];
                spans.extend(inline(item, Style::new()));
                return Line::from(spans);
            }
        }
        let digits = trimmed.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && trimmed[digits..].starts_with(". ") {
            let mut spans = vec![Span::raw(format!("{indent}{} ", &trimmed[..digits + 1]))];
            spans.extend(inline(&trimmed[digits + 2..], Style::new()));
            return Line::from(spans);
        }
        if let Some(quote) = trimmed.strip_prefix('>') {
            let mut spans = vec![Span::styled("│ ".to_owned(), dim())];
            spans.extend(inline(
                quote.trim_start(),
                Style::new().add_modifier(Modifier::ITALIC),
            ));
            return Line::from(spans);
        }
        Line::from(inline(text, Style::new()))
    }

    /// Whether a fenced code block is open (its closing fence has not come yet).
    pub fn in_fence(&self) -> bool {
        self.fence.is_some()
    }
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// The spans of one line's inline Markdown over `base`.
fn inline(text: &str, base: Style) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut style = base;
    let mut stack: Vec<Style> = Vec::new();
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(tag) => {
                stack.push(style);
                style = match tag {
                    Tag::Emphasis => style.add_modifier(Modifier::ITALIC),
                    Tag::Strong => style.add_modifier(Modifier::BOLD),
                    Tag::Strikethrough => style.add_modifier(Modifier::CROSSED_OUT),
                    Tag::Link { .. } => style.add_modifier(Modifier::UNDERLINED),
                    _ => style,
                };
            }
            Event::End(_) => style = stack.pop().unwrap_or(base),
            Event::Text(text) => spans.push(Span::styled(text.into_string(), style)),
            Event::Code(code) => spans.push(Span::styled(
                code.into_string(),
                style.add_modifier(Modifier::REVERSED),
            )),
            Event::SoftBreak | Event::HardBreak => spans.push(Span::styled(" ".to_owned(), style)),
            // HTML, footnotes and the like are shown as the model wrote them.
            Event::Html(raw) | Event::InlineHtml(raw) => {
                spans.push(Span::styled(raw.into_string(), style))
            }
            _ => {}
        }
    }
    if spans.is_empty() && !text.is_empty() {
        // A line Markdown reads as no inline content (a rule, say) is shown as written.
        spans.push(Span::styled(text.to_owned(), base));
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn blocks_are_told_apart_by_their_first_characters() {
        let mut md = Markdown::default();
        let heading = md.line("## Plan **now**");
        assert_eq!(text(&heading), "Plan now");
        assert!(heading.spans[0].style.add_modifier.contains(Modifier::BOLD));
        assert_eq!(
            text(&md.line("- an *item* with `code`")),
            "• an item with code"
        );
        assert_eq!(text(&md.line("  12. twelfth")), "  12. twelfth");
        assert_eq!(text(&md.line("> quoted")), "│ quoted");
        let code = md.line("see `x`");
        assert!(
            code.spans[1]
                .style
                .add_modifier
                .contains(Modifier::REVERSED)
        );
    }

    #[test]
    fn a_fence_keeps_its_lines_as_written() {
        let mut md = Markdown::default();
        md.line("```rust");
        assert!(md.in_fence());
        assert_eq!(
            text(&md.line("let **x** = 1; # not a heading")),
            "let **x** = 1; # not a heading"
        );
        md.line("```");
        assert!(!md.in_fence());
        assert_eq!(text(&md.line("**x**")), "x");
        assert_eq!(text(&md.line("---")), "---");
    }
}
