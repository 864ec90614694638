//! The views the format gates share, taken from one CommonMark parse so the gates see what a
//! reader sees: `lines` split on `\n`; which of them are prose (not part of a code block —
//! fenced anywhere, list items included, or indented); and the document's H2s as rendered.
//! RFC content checks scan prose only, so a document may quote the format inside a fence.

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

use crate::md::{Lines, options};

/// A rendered second-level heading.
#[derive(Clone, Debug)]
pub struct H2<'a> {
    /// 1-based line where it starts (the text line of a setext heading).
    pub line: u32,
    /// Its text as rendered (what a reader sees).
    pub text: String,
    /// Its source line, trailing whitespace trimmed.
    pub source: &'a str,
}

impl H2<'_> {
    /// The section name when the heading is written the canonical way, `## <name>` at the
    /// start of its line with one space; `None` for setext, indented, tab-separated,
    /// quoted or otherwise unusual spellings.
    pub fn canonical(&self) -> Option<&str> {
        let name = self.source.strip_prefix("## ")?;
        name.starts_with(|c: char| !c.is_whitespace())
            .then_some(name)
    }
}

/// The views of one document.
pub struct Views<'a> {
    pub lines: Vec<&'a str>,
    pub prose: Vec<bool>,
    pub h2s: Vec<H2<'a>>,
}

impl<'a> Views<'a> {
    pub fn new(text: &'a str) -> Views<'a> {
        let lines: Vec<&str> = text.split('\n').collect();
        let mut prose = vec![true; lines.len()];
        let mut h2s = Vec::new();
        let offsets = Lines::new(text);
        let line_of = |offset: usize| offsets.line(offset) as usize;
        let mut heading: Option<(u32, String)> = None;
        for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(_)) => {
                    // The block's range runs from its opening fence to its closing one (or to
                    // the end of its container when it is never closed).
                    let end = range.end.saturating_sub(1).max(range.start);
                    for flag in prose
                        .iter_mut()
                        .take(line_of(end))
                        .skip(line_of(range.start) - 1)
                    {
                        *flag = false;
                    }
                }
                Event::Start(Tag::Heading {
                    level: HeadingLevel::H2,
                    ..
                }) => {
                    heading = Some((offsets.line(range.start), String::new()));
                }
                Event::Text(t) | Event::Code(t) => {
                    if let Some((_, rendered)) = heading.as_mut() {
                        rendered.push_str(&t);
                    }
                }
                Event::End(TagEnd::Heading(HeadingLevel::H2)) => {
                    if let Some((line, rendered)) = heading.take() {
                        let source = lines.get(line as usize - 1).copied().unwrap_or("");
                        h2s.push(H2 {
                            line,
                            text: rendered.trim().to_owned(),
                            source: source.trim_end(),
                        });
                    }
                }
                _ => {}
            }
        }
        Views { lines, prose, h2s }
    }

    /// `(1-based line, text)` of every prose line.
    pub fn prose_lines(&self) -> impl Iterator<Item = (u32, &'a str)> + '_ {
        self.lines
            .iter()
            .enumerate()
            .filter(|(i, _)| self.prose[*i])
            .map(|(i, l)| (u32::try_from(i + 1).unwrap_or(u32::MAX), *l))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_anywhere_are_not_prose() {
        let v = Views::new(
            "a\n```rust\nStatus: x\n```\nb\n~~~~\n```\n~~~~\nc\n\n- item\n\n  ```\n  Status: y\n  ```\nd\n",
        );
        let prose: Vec<_> = v
            .prose_lines()
            .map(|(_, l)| l)
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(prose, ["a", "b", "c", "- item", "d"]);
    }

    #[test]
    fn h2s_are_what_a_reader_sees() {
        let text = "## Problem\n\n##\tProposal\n\n ## Plan\n\nPlan B\n---\n\n- item\n\n  ```\n## Migration plan\n\n### Deeper\n\n    ## Indented code\n";
        let v = Views::new(text);
        let seen: Vec<(u32, &str, Option<&str>)> = v
            .h2s
            .iter()
            .map(|h| (h.line, h.text.as_str(), h.canonical()))
            .collect();
        assert_eq!(
            seen,
            [
                (1, "Problem", Some("Problem")),
                (3, "Proposal", None),
                (5, "Plan", None),
                (7, "Plan B", None),
                (13, "Migration plan", Some("Migration plan")),
            ]
        );
    }
}
