//! The `rfc-tree` gate: every RFC sits at `docs/rfc/<lifecycle>/<class>/<date>-<slug>.md`
//! with a real, past date, a lowercase slug and an H1 on line 1.

use std::sync::LazyLock;

use regex::Regex;

use super::{CLASSES, LIFECYCLES, RFC_ROOT, SLUG, re};
use crate::date::Date;
use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::{Repo, Text};

static FILENAME: LazyLock<Regex> = LazyLock::new(|| re(r"^\d{4}-\d{2}-\d{2}-.+\.md$"));
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
    let docs: Vec<String> = repo.documents().map(str::to_owned).collect();
    for path in docs {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        let Some(lifecycle) = parts.first().and_then(|l| known(&LIFECYCLES, l)) else {
            continue;
        };
        if parts.len() == 1 {
            continue;
        }
        let name = parts[parts.len() - 1];
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
        if let Some(rfc) = check_file(repo, &path, lifecycle, class, name, &mut tree.diagnostics)? {
            tree.rfcs.push(rfc);
        }
    }
    Ok(tree)
}

fn valid_name(name: &str, repo: &Repo) -> bool {
    FILENAME.is_match(name)
        && Date::parse(&name[..10]).is_ok_and(|d| d <= repo.today())
        && SLUG.is_match(&name[11..name.len() - 3])
}

fn check_file(
    repo: &Repo,
    path: &str,
    lifecycle: &'static str,
    class: &'static str,
    name: &str,
    out: &mut Vec<Diagnostic>,
) -> Result<Option<Rfc>, XtaskError> {
    let diag = |rule, line, message: String| Diagnostic::new(rule, path, line, message);
    if !FILENAME.is_match(name) {
        out.push(diag(
            Rule::TreeFilename,
            None,
            format!("{name:?}: name the file <yyyy-mm-dd>-<slug>.md"),
        ));
        return Ok(None);
    }
    let mut failed = false;
    let date = match Date::parse(&name[..10]) {
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
                format!("{} does not exist on the calendar", &name[..10]),
            ));
            failed = true;
            Date::from_days(0)
        }
    };
    let slug = &name[11..name.len() - 3];
    if !SLUG.is_match(slug) {
        out.push(diag(
            Rule::TreeSlug,
            None,
            format!("slug {slug:?} must be lowercase ASCII words joined by single hyphens"),
        ));
        failed = true;
    }
    if failed {
        return Ok(None);
    }
    let Text::Utf8(text) = repo.text(path)? else {
        return Ok(None); // `files/not-utf8` reports it
    };
    let first = text.split('\n').next().unwrap_or("");
    let first = first.strip_prefix('\u{feff}').unwrap_or(first);
    let Some(title) = TITLE.captures(first).and_then(|c| c.get(1)) else {
        out.push(diag(
            Rule::TreeTitle,
            Some(1),
            "no H1 on line 1; start with \"# RFC: <title>\"".into(),
        ));
        return Ok(None);
    };
    Ok(Some(Rfc {
        path: path.to_owned(),
        lifecycle,
        class,
        file: name.to_owned(),
        date,
        title: title.as_str().to_owned(),
        text: text.clone(),
    }))
}
