//! The `doc-refs` gate: a `docs/….md` path cited in Rust source, in a comment or a
//! string, names a real document (and a real anchor when it carries a fragment).

use std::sync::LazyLock;

use regex::Regex;

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::links::anchor_missing;
use crate::repo::{Repo, Text};
use crate::rfc::re;

static TOKEN: LazyLock<Regex> =
    LazyLock::new(|| re(r"\bdocs/[A-Za-z0-9._/-]+\.md(#[A-Za-z0-9_-]+)?"));

/// Runs the gate over every scanned `.rs` file outside `xtask/tests/`.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut out = Vec::new();
    let mut checked = 0;
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
        for (index, line) in text.split('\n').enumerate() {
            for token in TOKEN.find_iter(line) {
                let token = token.as_str();
                let (target, fragment) = token.split_once('#').unwrap_or((token, ""));
                let number = u32::try_from(index + 1).ok();
                if !repo.exists(target) {
                    out.push(Diagnostic::new(
                        Rule::RefsMissing,
                        path.as_str(),
                        number,
                        format!("cites {target}, which is not in the repository"),
                    ));
                } else if !fragment.is_empty()
                    && let Some(why) = anchor_missing(repo, target, fragment)?
                {
                    out.push(Diagnostic::new(
                        Rule::RefsAnchor,
                        path.as_str(),
                        number,
                        format!("cites {token}: {why}"),
                    ));
                }
            }
        }
    }
    Ok((out, checked))
}
