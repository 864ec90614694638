//! The `rfc-tree` gate: every RFC sits at `docs/rfc/<lifecycle>/<class>/<date>-<slug>.md`
//! with a real, past date, a lowercase slug unique across lifecycles and an H1 on line 1;
//! every other Markdown file under `docs/rfc/` is the curated README, the generated index,
//! a twin of one of those, or a finding.
//!
//! File names are taken apart by one ASCII-only pattern with captures, never by byte
//! offsets, so a name in any script is a finding and never a panic.

use std::sync::LazyLock;

use regex::Regex;

use super::{CLASSES, LIFECYCLES, RFC_ROOT, SLUG, re};
use crate::date::Date;
use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::{Repo, Text};

static FILENAME: LazyLock<Regex> = LazyLock::new(|| re(r"^([0-9]{4}-[0-9]{2}-[0-9]{2})-(.+)\.md$"));

/// Files the top of `docs/rfc/` may hold besides folders.
const TOP_LEVEL: [&str; 4] = ["README.md", "README.zh.md", "INDEX.md", "INDEX.zh.md"];

/// Extensions a Markdown file may carry; only the lowercase `.md` is an RFC's.
const MARKDOWN: [&str; 5] = [".md", ".markdown", ".mdown", ".mkd", ".mkdn"];

/// The date and slug of an RFC file name `<yyyy-mm-dd>-<slug>.md`, if it has that shape.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let captures = FILENAME.captures(name)?;
    Some((captures.get(1)?.as_str(), captures.get(2)?.as_str()))
}
static TITLE: LazyLock<Regex> = LazyLock::new(|| re(r"^#\s+(?:RFC:\s+)?(.+?)\s*$"));

/// An RFC that passed every tree check.
#[derive(Clone, Debug)]
pub struct Rfc {
    pub path: String,
    pub lifecycle: &'static str,
    pub class: &'static str,
    pub file: String,
    pub date: Date,
    pub title: String,
    pub text: std::sync::Arc<str>,
}

/// A twin at a valid RFC position, whose header `rfc-format` checks.
#[derive(Clone, Debug)]
pub struct Twin {
    pub path: String,
    pub lifecycle: &'static str,
    pub text: std::sync::Arc<str>,
}

/// The tree's verdict.
#[derive(Debug, Default)]
pub struct Tree {
    pub rfcs: Vec<Rfc>,
    pub twins: Vec<Twin>,
    pub diagnostics: Vec<Diagnostic>,
    pub checked: usize,
    /// RFCs whose text is not UTF-8 (`files/not-utf8` reports them): the index cannot be
    /// rendered without them.
    pub unreadable: Vec<String>,
}

impl Tree {
    /// True when the index can be rendered from this tree: no violation, no unreadable RFC.
    pub fn is_clean(&self) -> bool {
        self.diagnostics.is_empty() && self.unreadable.is_empty()
    }

    /// The `files/not-utf8` findings of the unreadable RFCs, for commands that run only the
    /// tree.
    pub fn unreadable_findings(&self) -> Vec<Diagnostic> {
        self.unreadable
            .iter()
            .map(|path| {
                Diagnostic::new(
                    Rule::FilesNotUtf8,
                    path.as_str(),
                    None,
                    "file is not UTF-8; save it as UTF-8 (the index keeps its row until then)"
                        .into(),
                )
            })
            .collect()
    }
}

fn known(set: &[&'static str], name: &str) -> Option<&'static str> {
    set.iter().copied().find(|s| *s == name)
}

/// Walks `docs/rfc/` and classifies every entry.
pub fn check(repo: &Repo) -> Result<Tree, XtaskError> {
    let mut tree = Tree::default();
    let prefix = format!("{RFC_ROOT}/");
    for dir in repo.scanned_dirs() {
        let Some(rest) = dir.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split('/').collect::<Vec<_>>()[..] {
            [lifecycle] if known(&LIFECYCLES, lifecycle).is_none() => {
                tree.diagnostics.push(Diagnostic::new(
                    Rule::TreeUnknownLifecycle,
                    format!("{dir}/"),
                    None,
                    format!("{lifecycle:?} is no lifecycle; use proposed, implemented or rejected"),
                ));
            }
            [lifecycle, class]
                if known(&LIFECYCLES, lifecycle).is_some() && known(&CLASSES, class).is_none() =>
            {
                tree.diagnostics.push(Diagnostic::new(
                    Rule::TreeUnknownClass,
                    format!("{dir}/"),
                    None,
                    format!(
                        "{class:?} is no class; use one of {}, or extend the class constant and the README together",
                        CLASSES.join(", ")
                    ),
                ));
            }
            _ => {}
        }
    }
    let files: Vec<String> = repo
        .scanned_files()
        .filter(|p| p.starts_with(&prefix))
        .map(str::to_owned)
        .collect();
    for path in files {
        let rest = &path[prefix.len()..];
        let parts: Vec<&str> = rest.split('/').collect();
        let name = parts[parts.len() - 1];
        if !is_markdown(name) {
            continue;
        }
        if !name.ends_with(".md") {
            tree.diagnostics.push(Diagnostic::new(
                Rule::TreeExtension,
                path.clone(),
                None,
                format!("{name:?}: Markdown under docs/rfc/ ends in a lowercase .md"),
            ));
            continue;
        }
        if parts.len() == 1 {
            if !TOP_LEVEL.contains(&name) {
                tree.diagnostics.push(Diagnostic::new(
                    Rule::TreeStray,
                    path.clone(),
                    None,
                    "only README.md and the generated INDEX.md (and their twins) sit at the top of docs/rfc/; an RFC goes in <lifecycle>/<class>/".into(),
                ));
            }
            continue;
        }
        let Some(lifecycle) = known(&LIFECYCLES, parts[0]) else {
            continue; // reported once, on the directory
        };
        if let Some(stem) = name.strip_suffix(".zh.md") {
            if let ([_, class, _], Text::Utf8(text)) = (&parts[..], repo.text(&path)?)
                && known(&CLASSES, class).is_some()
                && valid_name(&format!("{stem}.md"), repo)
            {
                tree.twins.push(Twin {
                    path: path.clone(),
                    lifecycle,
                    text,
                });
            }
            continue;
        }
        if parts.len() == 2 && (name == "AGENTS.md" || name == "CLAUDE.md") {
            continue;
        }
        tree.checked += 1;
        if parts.len() != 3 {
            tree.diagnostics.push(Diagnostic::new(
                Rule::TreeDepth,
                path.clone(),
                None,
                format!(
                    "found at depth {}; RFCs sit at <lifecycle>/<class>/<date>-<slug>.md",
                    parts.len()
                ),
            ));
            continue;
        }
        let Some(class) = known(&CLASSES, parts[1]) else {
            continue; // reported once, on the directory
        };
        let place = Place {
            path: &path,
            lifecycle,
            class,
            name,
        };
        match check_file(repo, &place, &mut tree.diagnostics)? {
            Checked::Rfc(rfc) => tree.rfcs.push(*rfc),
            Checked::Unreadable => tree.unreadable.push(path.clone()),
            Checked::Refused => {}
        }
    }
    duplicate_slugs(&mut tree);
    Ok(tree)
}

fn is_markdown(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    MARKDOWN.iter().any(|ext| lower.ends_with(ext))
}

/// A slug names one topic: the same slug in two places (two lifecycles, say, after a copy
/// instead of a move) is reported on every file after the first.
fn duplicate_slugs(tree: &mut Tree) {
    let mut first: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for rfc in &tree.rfcs {
        let slug = split_name(&rfc.file).map_or("", |(_, slug)| slug);
        match first.get(slug) {
            Some(other) => tree.diagnostics.push(Diagnostic::new(
                Rule::TreeDuplicateSlug,
                rfc.path.as_str(),
                None,
                format!("slug {slug:?} is already used by {other}; an RFC moves between lifecycles, it is not copied"),
            )),
            None => {
                first.insert(slug, &rfc.path);
            }
        }
    }
}

fn valid_name(name: &str, repo: &Repo) -> bool {
    split_name(name).is_some_and(|(date, slug)| {
        Date::parse(date).is_ok_and(|d| d <= repo.today()) && SLUG.is_match(slug)
    })
}

/// Where a candidate RFC sits.
struct Place<'a> {
    path: &'a str,
    lifecycle: &'static str,
    class: &'static str,
    name: &'a str,
}

/// What checking one candidate found.
enum Checked {
    Rfc(Box<Rfc>),
    /// Its text is not UTF-8.
    Unreadable,
    /// A rule refused it (a diagnostic was pushed).
    Refused,
}

fn check_file(
    repo: &Repo,
    place: &Place<'_>,
    out: &mut Vec<Diagnostic>,
) -> Result<Checked, XtaskError> {
    let path = place.path;
    let name = place.name;
    let diag = |rule, line, message: String| Diagnostic::new(rule, path, line, message);
    let Some((date_text, slug)) = split_name(name) else {
        out.push(diag(
            Rule::TreeFilename,
            None,
            format!("{name:?}: name the file <yyyy-mm-dd>-<slug>.md"),
        ));
        return Ok(Checked::Refused);
    };
    let mut failed = false;
    let date = match Date::parse(date_text) {
        Ok(date) if date > repo.today() => {
            out.push(diag(
                Rule::TreeFutureDate,
                None,
                format!(
                    "{date} lies in the future (today is {}); date the file when its topic came up",
                    repo.today()
                ),
            ));
            failed = true;
            date
        }
        Ok(date) => date,
        Err(_) => {
            out.push(diag(
                Rule::TreeInvalidDate,
                None,
                format!("{date_text} does not exist on the calendar"),
            ));
            failed = true;
            Date::from_days(0)
        }
    };
    if !SLUG.is_match(slug) {
        out.push(diag(
            Rule::TreeSlug,
            None,
            format!("slug {slug:?} must be lowercase ASCII words joined by single hyphens"),
        ));
        failed = true;
    }
    if failed {
        return Ok(Checked::Refused);
    }
    let Text::Utf8(text) = repo.text(path)? else {
        return Ok(Checked::Unreadable);
    };
    let first = text.split('\n').next().unwrap_or("");
    let first = first.strip_prefix('\u{feff}').unwrap_or(first);
    let Some(title) = TITLE.captures(first).and_then(|c| c.get(1)) else {
        out.push(diag(
            Rule::TreeTitle,
            Some(1),
            "no H1 on line 1; start with \"# RFC: <title>\"".into(),
        ));
        return Ok(Checked::Refused);
    };
    Ok(Checked::Rfc(Box::new(Rfc {
        path: path.to_owned(),
        lifecycle: place.lifecycle,
        class: place.class,
        file: name.to_owned(),
        date,
        title: title.as_str().to_owned(),
        text: text.clone(),
    })))
}
