//! The `doc-refs` gate: a `docs/….md` path cited in Rust source, in a comment or a
//! string, names a real document (and a real anchor when it carries a fragment); and
//! nothing cites what the repository does not hold.
//!
//! The design specifications dsh was built from number their requirements and tests; those
//! documents live outside the repository, so an id of theirs in a comment, a document or a
//! manifest is a reference no maintainer can follow. The rule is said in words instead, or
//! linked to an RFC or `docs/architecture.md`.

use std::sync::LazyLock;

use regex::Regex;

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::links::anchor_missing;
use crate::md::Lines;
use crate::repo::{Repo, Text};
use crate::rfc::re;

static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bdocs/[A-Za-z0-9._/-]+\.md(#[A-Za-z0-9_-]+)?"));

/// The id shapes of the external specifications: a prefix of theirs, a hyphen, an optional
/// letter and a number. Common technical names of the same shape (UTF-8, SHA-256, ISO-8601)
/// use no listed prefix.
static SPEC_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?-u:\b)(?:T-(?:FMT|PAR|LNK|TRE|IDX|DEP|NEW|BUD|CI|REPO|SCP|REF|CLI|WRP|CDOC|OUT|META)",
        r"|T|CT|AG|ACP|TB|SE|SL|SH|SP|SJ|CLI|UT|PT|BM|FMT|PAR|OAI|LLM|RUN|TRE|RPL|OUT|IDX|BUD",
        r"|COR|LNK|DEMO|CI|BU|DEP|CFG|SES|MOCK|CDOC|BGT|REF|WRP|NEW|SCP)-[A-Z]?[0-9]{1,3}[a-z]?(?-u:\b)",
    ))
});

/// Text files whose every line is prose or configuration a maintainer reads.
const READ_WHOLE: [&str; 6] = [".md", ".toml", ".yaml", ".yml", ".mjs", ".json"];

/// Runs the gate: document paths over every scanned `.rs` file outside `xtask/tests/`, and
/// specification ids over the comments of every `.rs` file and the whole of every document,
/// manifest and script.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut out = Vec::new();
    let mut checked = spec_ids(repo, &mut out)?;
    let sources: Vec<String> = repo
        .scanned_files()
        .filter(|p| p.ends_with(".rs") && !p.starts_with("xtask/tests/"))
        .map(str::to_owned)
        .collect();
    for path in &sources {
        let Text::Utf8(text) = repo.text(path)? else {
            continue;
        };
        checked += 1;
        // One pass over the whole text (the engine is fast, per-line loops in the dev
        // profile are not); line numbers only for what is found.
        let mut lines = None;
        for token in TOKEN.find_iter(&text) {
            let number = lines
                .get_or_insert_with(|| Lines::new(&text))
                .line(token.start());
            let token = token.as_str();
            let (target, fragment) = token.split_once('#').unwrap_or((token, ""));
            if !repo.exists(target) {
                out.push(Diagnostic::new(
                    Rule::RefsMissing,
                    path.as_str(),
                    Some(number),
                    format!("cites {target}, which is not in the repository"),
                ));
            } else if !fragment.is_empty()
                && let Some(why) = anchor_missing(repo, target, fragment)?
            {
                out.push(Diagnostic::new(
                    Rule::RefsAnchor,
                    path.as_str(),
                    Some(number),
                    format!("cites {token}: {why}"),
                ));
            }
        }
    }
    Ok((out, checked))
}

/// `doc-refs/spec-id` for every specification id; returns how many files it read.
fn spec_ids(repo: &Repo, out: &mut Vec<Diagnostic>) -> Result<usize, XtaskError> {
    let files: Vec<String> = repo
        .scanned_files()
        .filter(|p| p.ends_with(".rs") || READ_WHOLE.iter().any(|ext| p.ends_with(ext)))
        .filter(|p| *p != "Cargo.lock" && !p.ends_with("package-lock.json"))
        .map(str::to_owned)
        .collect();
    let mut checked = 0;
    for path in &files {
        let Text::Utf8(text) = repo.text(path)? else {
            continue;
        };
        checked += 1;
        let rust = path.ends_with(".rs");
        let mut lines = None;
        for id in SPEC_ID.find_iter(&text) {
            // In Rust only comments are prose; a string may hold data of this shape.
            let line_start = text[..id.start()].rfind('\n').map_or(0, |at| at + 1);
            if rust && !text[line_start..id.start()].contains("//") {
                continue;
            }
            let number = lines
                .get_or_insert_with(|| Lines::new(&text))
                .line(id.start());
            out.push(Diagnostic::new(
                Rule::RefsSpecId,
                path.as_str(),
                Some(number),
                format!(
                    "cites {}, a requirement of a specification the repository does not hold; say the rule in words or link a document that is here",
                    id.as_str()
                ),
            ));
        }
    }
    Ok(checked)
}
