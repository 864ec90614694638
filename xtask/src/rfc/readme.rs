//! The README half of the `rfc-index` gate: the curated `docs/rfc/README.md` holds no
//! index-shaped rows, because the list of RFCs lives in the generated index alone.
//!
//! A row is found the way a reader sees it: the README is parsed, so a link in a fenced
//! code block is an example and never a row, and a link counts by where it leads (inline,
//! reference-style, angle-bracketed, autolinked or an HTML `href`, in any cell, in any
//! spelling of its path), not by how it is written.

use std::sync::LazyLock;

use percent_encoding::percent_decode_str;
use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use regex::Regex;

use super::{LIFECYCLES, README_PATH, RFC_ROOT, re};
use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::md::{Lines, cut, options};
use crate::repo::{Repo, Text};

static HREF: LazyLock<Regex> =
    LazyLock::new(|| re(r#"(?i)\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))"#));
static CODE_SPAN: LazyLock<Regex> = LazyLock::new(|| re(r"`+[^`]*`+"));

/// `rfc-index/readme-row` for every index-shaped row of the RFC README.
pub fn readme_rows(repo: &Repo) -> Result<Vec<Diagnostic>, XtaskError> {
    if !repo.is_scanned_file(README_PATH) {
        return Ok(Vec::new());
    }
    let Text::Utf8(text) = repo.text(README_PATH)? else {
        return Ok(Vec::new());
    };
    let source: Vec<&str> = text.split('\n').collect();
    let mut rows: Vec<u32> = Vec::new();
    for (line, in_table) in rfc_links(&text) {
        let shown = source.get(line as usize - 1).copied().unwrap_or("");
        if (in_table || row_shaped(shown)) && !rows.contains(&line) {
            rows.push(line);
        }
    }
    Ok(rows
        .into_iter()
        .map(|line| {
            let shown = source.get(line as usize - 1).copied().unwrap_or("");
            Diagnostic::new(
                Rule::IndexReadmeRow,
                README_PATH,
                Some(line),
                format!(
                    "RFC rows belong to the generated INDEX.md: {:?}",
                    cut(shown.trim(), 80)
                ),
            )
        })
        .collect())
}

/// The line of every link that leads into an RFC lifecycle folder, and whether it sits in a
/// parsed table.
fn rfc_links(text: &str) -> Vec<(u32, bool)> {
    let lines = Lines::new(text);
    let mut found = Vec::new();
    let mut table = 0usize;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Table(_)) => table += 1,
            Event::End(TagEnd::Table) => table = table.saturating_sub(1),
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })
                if leads_to_rfc(&dest_url) =>
            {
                found.push((lines.line(range.start), table > 0));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for href in HREF.captures_iter(&html) {
                    let value = (1..=3).find_map(|i| href.get(i)).map_or("", |m| m.as_str());
                    if leads_to_rfc(value) {
                        let at = range.start + href.get(0).map_or(0, |m| m.start());
                        found.push((lines.line(at.min(text.len())), table > 0));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// A source line shaped like a table row: a cell separator outside code spans.
fn row_shaped(line: &str) -> bool {
    CODE_SPAN.replace_all(line, "").contains('|')
}

/// Whether a link destination, resolved from `docs/rfc/README.md` as GitHub resolves it,
/// lands in `docs/rfc/<lifecycle>/`.
fn leads_to_rfc(dest: &str) -> bool {
    let dest = dest.split(['#', '?']).next().unwrap_or("");
    // Decoded as a browser does before following the link.
    let dest = percent_decode_str(dest)
        .decode_utf8_lossy()
        .to_ascii_lowercase();
    let path = match dest.split_once("://") {
        // A full URL: its path, wherever the repository is hosted.
        Some((_, rest)) => return in_lifecycle(rest, true),
        None => dest,
    };
    let joined = match path.strip_prefix('/') {
        Some(from_root) => from_root.to_owned(),
        None => format!("{RFC_ROOT}/{path}"),
    };
    in_lifecycle(&joined, false)
}

/// Whether `path` (segments joined by `/`) names something under a lifecycle folder of the
/// RFC tree; `anywhere` allows a prefix before `docs/rfc/` (a URL's host and branch).
fn in_lifecycle(path: &str, anywhere: bool) -> bool {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let starts = if anywhere { segments.len() } else { 1 };
    (0..starts).any(|i| {
        matches!(
            segments.get(i..i + 4),
            Some([docs, rfc, lifecycle, _]) if *docs == "docs" && *rfc == "rfc" && LIFECYCLES.contains(lifecycle)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Paths here carry no `.md`, so the reference gate does not take them for citations.
    #[test]
    fn destinations_are_resolved_as_github_resolves_them() {
        for dest in [
            "implemented/process/x.md",
            "./implemented/process/x.md",
            "Implemented/process/x.md",
            "../rfc/proposed/feature/x.md#why",
            "/docs/rfc/rejected/architecture/x",
            "%69mplemented/process/x.md",
            "https://github.com/o/r/blob/main/docs/rfc/implemented/process/x",
        ] {
            assert!(leads_to_rfc(dest), "{dest}");
        }
        for dest in [
            "INDEX.md",
            "README.md#lifecycles",
            "../architecture.md",
            "implemented",
            "/docs/implemented/process/x",
            "https://example.com/implemented/x.md",
        ] {
            assert!(!leads_to_rfc(dest), "{dest}");
        }
    }

    #[test]
    fn rows_are_found_in_every_shape_and_never_in_code() {
        let readme = "\
# RFCs

See [an example](implemented/process/x.md) in prose.

| [A](implemented/process/a.md) | 2026-08-02 |
   | [B](implemented/process/b.md) | 2026-08-02 |
[C](implemented/process/c.md) | 2026-08-02
| 2026-08-02 | **[D](<implemented/process/d.md>)** |
| [E][e] | 2026-08-02 |
| <a href=\"implemented/process/f.md\">F</a> | 2026-08-02 |

| Title | Date |
|---|---|
| [G](/docs/rfc/proposed/feature/g) | 2026-08-02 |

```markdown
| [H](implemented/process/h.md) | 2026-08-02 |
```

- list with `a | b` and [a link](implemented/process/i.md)

[e]: implemented/process/e.md
";
        let lines: Vec<u32> = rfc_links(readme)
            .into_iter()
            .filter(|(line, table)| {
                *table || row_shaped(readme.split('\n').nth(*line as usize - 1).unwrap_or(""))
            })
            .map(|(line, _)| line)
            .collect();
        assert_eq!(lines, [5, 6, 7, 8, 9, 10, 14]);
    }
}
