//! Markdown, parsed once per file and shared by every gate: one
//! pulldown-cmark pass collects headings, anchors, links, wrapped blocks, code blocks and
//! tables.

use std::collections::{HashMap, HashSet};

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// A heading: depth, rendered text (what its anchor slug is made from) and 1-based line.
#[derive(Clone, Debug)]
pub struct Heading {
    pub depth: u8,
    pub text: String,
    pub line: u32,
}

/// How a link was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// `[t](dest)`.
    Inline,
    /// `![alt](dest)`.
    Image,
    /// `[label]: dest`.
    Definition,
    /// A reference-style use (`[t][label]`, `[label]`); its destination is its definition's.
    Reference,
    /// `<https://…>` or `<a@b>`.
    Autolink,
}

/// One link destination with its line.
#[derive(Clone, Debug)]
pub struct Link {
    pub dest: String,
    pub line: u32,
    pub kind: LinkKind,
}

/// A fenced or indented code block's signature (for translation structure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub lang: String,
    pub rest: String,
    pub body: String,
    pub line: u32,
}

/// A block whose prose spans several source lines.
#[derive(Clone, Debug)]
pub struct Wrapped {
    pub line: u32,
    pub first: String,
}

/// Everything the gates read from one Markdown file.
#[derive(Debug, Default)]
pub struct Doc {
    pub headings: Vec<Heading>,
    /// Heading slugs plus `id`/`name` values of `<a>` tags.
    pub anchors: HashSet<String>,
    /// Links in document order; definitions are appended after the inline ones.
    pub links: Vec<Link>,
    pub wrapped: Vec<Wrapped>,
    pub code: Vec<Code>,
    /// Tables as (`{rows}x{columns}`, line).
    pub tables: Vec<(String, u32)>,
}

/// Maps byte offsets to 1-based line numbers.
pub struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    pub fn new(text: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { starts }
    }

    pub fn line(&self, offset: usize) -> u32 {
        let index = self.starts.partition_point(|&s| s <= offset);
        u32::try_from(index.max(1)).unwrap_or(u32::MAX)
    }
}

/// The options every gate parses with: CommonMark plus GFM tables, strikethrough, task lists
/// and footnotes.
pub fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
}

/// Parses `text` once into a [`Doc`].
pub fn parse(text: &str) -> Doc {
    let lines = Lines::new(text);
    let parser = Parser::new_ext(text, options());
    let mut doc = Doc::default();
    let mut definitions: Vec<Link> = parser
        .reference_definitions()
        .iter()
        .map(|(_, def)| Link {
            dest: def.dest.to_string(),
            line: lines.line(def.span.start),
            kind: LinkKind::Definition,
        })
        .collect();
    definitions.sort_by_key(|l| l.line);

    let mut slugger = Slugger::default();
    let mut heading: Option<(u8, String, u32)> = None;
    let mut html_block: Option<String> = None;
    let mut code: Option<(String, String, String, u32)> = None;
    let mut table: Option<(usize, usize, u32)> = None;
    // Open prose blocks: (start offset, is a list item, already reported).
    let mut blocks: Vec<(usize, bool, bool)> = Vec::new();
    let mut inline_html = String::new();

    for (event, range) in parser.into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level as u8, String::new(), lines.line(range.start)));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((depth, text, line)) = heading.take() {
                    doc.anchors.insert(slugger.slug(&text));
                    doc.headings.push(Heading { depth, text, line });
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, text, _)) = heading.as_mut() {
                    text.push_str(&t);
                }
                if let Some((_, _, body, _)) = code.as_mut() {
                    body.push_str(&t);
                }
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                let info = match kind {
                    CodeBlockKind::Fenced(info) => info.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                let info = info.trim();
                let (lang, rest) = info.split_once(char::is_whitespace).unwrap_or((info, ""));
                code = Some((
                    lang.trim().to_owned(),
                    rest.trim().to_owned(),
                    String::new(),
                    lines.line(range.start),
                ));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, rest, mut body, line)) = code.take() {
                    if body.ends_with('\n') {
                        body.pop();
                    }
                    doc.code.push(Code {
                        lang,
                        rest,
                        body,
                        line,
                    });
                }
            }
            Event::Start(Tag::Table(_)) => table = Some((0, 0, lines.line(range.start))),
            Event::Start(Tag::TableHead) | Event::Start(Tag::TableRow) => {
                if let Some((rows, _, _)) = table.as_mut() {
                    *rows += 1;
                }
            }
            Event::Start(Tag::TableCell) => {
                if let Some((1, cols, _)) = table.as_mut() {
                    *cols += 1;
                }
            }
            Event::End(TagEnd::Table) => {
                if let Some((rows, cols, line)) = table.take() {
                    doc.tables.push((format!("{rows}x{cols}"), line));
                }
            }
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => doc.links.push(Link {
                dest: dest_url.to_string(),
                line: lines.line(range.start),
                kind: link_kind(link_type, LinkKind::Image),
            }),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            }) => doc.links.push(Link {
                dest: dest_url.to_string(),
                line: lines.line(range.start),
                kind: link_kind(link_type, LinkKind::Inline),
            }),
            Event::Start(Tag::HtmlBlock) => html_block = Some(String::new()),
            Event::Html(h) => {
                if let Some(block) = html_block.as_mut() {
                    block.push_str(&h);
                }
            }
            Event::End(TagEnd::HtmlBlock) => {
                if let Some(block) = html_block.take() {
                    html_anchors(&block, &mut doc.anchors);
                }
            }
            Event::InlineHtml(h) => {
                inline_html.push_str(&h);
                inline_html.push('\n');
            }
            Event::Start(Tag::Paragraph) => blocks.push((range.start, false, false)),
            Event::Start(Tag::Item) => blocks.push((range.start, true, false)),
            Event::End(TagEnd::Paragraph) => {
                blocks.pop();
                if text[range.clone()].trim_end().contains('\n') {
                    doc.wrapped.push(wrapped(text, &lines, range.start));
                }
            }
            Event::End(TagEnd::Item) => {
                blocks.pop();
            }
            Event::SoftBreak | Event::HardBreak if heading.is_none() => {
                // A tight list item has no paragraph node: its breaks mark the item itself.
                if let Some(item) = blocks.last_mut().filter(|b| b.1 && !b.2) {
                    item.2 = true;
                    doc.wrapped.push(wrapped(text, &lines, item.0));
                }
            }
            _ => {}
        }
    }
    html_anchors(&inline_html, &mut doc.anchors);
    doc.links.extend(definitions);
    doc
}

fn link_kind(link_type: LinkType, inline: LinkKind) -> LinkKind {
    match link_type {
        LinkType::Autolink | LinkType::Email => LinkKind::Autolink,
        LinkType::Inline => inline,
        _ => LinkKind::Reference,
    }
}

fn wrapped(text: &str, lines: &Lines, start: usize) -> Wrapped {
    let line = lines.line(start);
    let first = text[start..].lines().next().unwrap_or("").trim();
    Wrapped {
        line,
        first: cut(first, 80),
    }
}

/// `s` cut to `max` characters, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

/// Adds the `id`/`name` of every `<a …>` tag in `html`, outside HTML comments.
fn html_anchors(html: &str, anchors: &mut HashSet<String>) {
    let mut rest = html;
    let mut visible = String::new();
    while let Some(start) = rest.find("<!--") {
        visible.push_str(&rest[..start]);
        rest = match rest[start + 4..].find("-->") {
            Some(end) => &rest[start + 4 + end + 3..],
            None => "",
        };
    }
    visible.push_str(rest);
    for tag in visible.split('<').skip(1) {
        // HTML names are case-insensitive: `<A ID=…>` is an anchor too.
        let Some(attrs) = tag
            .strip_prefix(['a', 'A'])
            .filter(|a| a.starts_with(char::is_whitespace))
        else {
            continue;
        };
        let attrs = attrs.split('>').next().unwrap_or("");
        for name in ["id", "name"] {
            if let Some(value) = attribute(attrs, name) {
                anchors.insert(value);
            }
        }
    }
}

fn attribute(attrs: &str, name: &str) -> Option<String> {
    // Attribute names are matched on a lowercased copy; ASCII lowercasing keeps every byte
    // offset, so the value is cut from the original.
    let lower = attrs.to_ascii_lowercase();
    let mut offset = 0;
    while let Some(found) = lower[offset..].find(name) {
        let pos = offset + found;
        let before_ok = attrs[..pos].chars().last().is_none_or(char::is_whitespace);
        let after = attrs[pos + name.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let (quote, body) = match value.chars().next() {
                Some(q @ ('"' | '\'')) => (Some(q), &value[1..]),
                _ => (None, value),
            };
            let end = body
                .find(|c: char| match quote {
                    Some(q) => c == q,
                    None => c.is_whitespace() || c == '>' || c == '/',
                })
                .unwrap_or(body.len());
            return Some(body[..end].to_owned());
        }
        offset = pos + name.len();
    }
    None
}

/// GitHub-style heading slugs with per-file deduplication.
#[derive(Default)]
pub struct Slugger {
    taken: HashSet<String>,
    counters: HashMap<String, u32>,
}

impl Slugger {
    /// The slug of a heading's rendered text, unique within this slugger.
    pub fn slug(&mut self, text: &str) -> String {
        let base: String = text
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '-' || *c == ' ')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut slug = base.clone();
        if self.taken.contains(&slug) {
            let counter = self.counters.entry(base.clone()).or_insert(0);
            loop {
                *counter += 1;
                slug = format!("{base}-{counter}");
                if !self.taken.contains(&slug) {
                    break;
                }
            }
        }
        self.taken.insert(slug.clone());
        slug
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_github() {
        let mut s = Slugger::default();
        assert_eq!(s.slug("Live `events` — mode!"), "live-events--mode");
        assert_eq!(s.slug("Showcase: web_fetch"), "showcase-web_fetch");
        assert_eq!(s.slug("决策"), "决策");
        let mut s = Slugger::default();
        assert_eq!(s.slug("Repeat"), "repeat");
        assert_eq!(s.slug("Repeat-1"), "repeat-1");
        assert_eq!(s.slug("Repeat"), "repeat-2");
    }

    #[test]
    fn heading_text_renders_code_and_links() {
        let doc = parse("# [Install](setup.md)\n\n## Live `events` — mode!\n");
        assert!(doc.anchors.contains("install"));
        assert!(doc.anchors.contains("live-events--mode"));
    }

    #[test]
    fn html_anchors_ignore_the_case_of_tag_and_attribute_names() {
        let doc = parse(
            "<A ID=\"upper\"></A>\n\n<a Name='mixed'>x</a> and <a href=\"#x\" id=Bare>y</a>\n",
        );
        for anchor in ["upper", "mixed", "Bare"] {
            assert!(doc.anchors.contains(anchor), "{anchor}: {:?}", doc.anchors);
        }
        assert!(!doc.anchors.contains("upper\""));
    }

    #[test]
    fn html_anchors_skip_comments() {
        let doc = parse("<a id=\"hand\"></a>\n\n<!-- <a id=\"hidden\"></a> -->\n");
        assert!(doc.anchors.contains("hand"));
        assert!(!doc.anchors.contains("hidden"));
    }

    #[test]
    fn wrapped_blocks() {
        let doc =
            parse("one line\n\ntwo\nlines\n\n- foo\n  bar\n\n> a\n> b\n\n| a |\n|---|\n| b |\n");
        let lines: Vec<u32> = doc.wrapped.iter().map(|w| w.line).collect();
        assert_eq!(lines, [3, 6, 9]);
    }
}
