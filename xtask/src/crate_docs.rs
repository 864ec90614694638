//! The crate-docs gate: every member's crate root opens with its
//! documentation, and that documentation states the member's seam role exactly once.

use std::collections::BTreeMap;

use crate::cargo::{Metadata, relative};
use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::Repo;
use crate::roles::{Role, line_number};

const ROLE_PREFIX: &str = "//! Seam role: ";
const ROLE_WORDS: [&str; 5] = ["definition", "provider", "consumer", "root", "support"];

/// Runs the gate over every member. Returns the diagnostics and the number of crate roots read.
pub fn check(
    metadata: &Metadata,
    roles: &BTreeMap<String, Role>,
    repo: &Repo,
) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut diagnostics = Vec::new();
    let mut checked = 0;
    for member in metadata.members() {
        let Some(root_file) = member.crate_root() else {
            continue;
        };
        let path = relative(repo.root(), root_file);
        let text = repo.text_or_empty(&path)?;
        checked += 1;
        diagnostics.extend(check_text(&path, &text, roles.get(&member.name).copied()));
    }
    Ok((diagnostics, checked))
}

/// The role word of a `//! Seam role: <word>` line, if the line is one.
fn role_word(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(ROLE_PREFIX)?;
    ROLE_WORDS.into_iter().find(|word| {
        rest.strip_prefix(word)
            .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    })
}

/// Checks one crate root's text. `role` is `None` for an unclassified member (the `deps` gate
/// reports that); then only the presence of exactly one role line is checked.
pub fn check_text(path: &str, text: &str, role: Option<Role>) -> Vec<Diagnostic> {
    if !text.starts_with("//!") {
        return vec![Diagnostic::new(
            Rule::CrateDocsMissing,
            path,
            Some(1),
            "the file must open with the crate documentation (`//!` lines) before any licence comment or attribute".into(),
        )];
    }
    let expected = role.map(Role::word);
    let want = expected.unwrap_or("<role>");
    let role_lines: Vec<(usize, &str)> = text
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .enumerate()
        .filter_map(|(index, line)| role_word(line).map(|word| (index, word)))
        .collect();
    let mut diagnostics = Vec::new();
    match role_lines.as_slice() {
        [] => diagnostics.push(Diagnostic::new(
            Rule::CrateDocsRole,
            path,
            None,
            format!("the crate documentation needs exactly one \"//! Seam role: {want}\" line"),
        )),
        [first, rest @ ..] => {
            if let Some(expected) = expected.filter(|e| *e != first.1) {
                diagnostics.push(Diagnostic::new(
                    Rule::CrateDocsRole,
                    path,
                    line_number(first.0),
                    format!(
                        "the role line says {:?}, but the roles table classifies this crate as {expected:?}; expected \"//! Seam role: {expected}\"",
                        first.1
                    ),
                ));
            }
            for (index, _) in rest {
                diagnostics.push(Diagnostic::new(
                    Rule::CrateDocsRole,
                    path,
                    line_number(*index),
                    format!(
                        "a second role line; expected exactly one \"//! Seam role: {want}\" line"
                    ),
                ));
            }
        }
    }
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str, role: Option<Role>) -> Vec<String> {
        check_text("src/lib.rs", text, role)
            .iter()
            .map(Diagnostic::human)
            .map(|h| h.split(": ").take(2).collect::<Vec<_>>().join(": "))
            .collect()
    }

    #[test]
    fn accepts_one_matching_role_line() {
        let text = "//! Seam role: provider of x::Y, on disk.\n//!\n//! More.\nuse std::fs;\n";
        assert!(rules(text, Some(Role::Provider)).is_empty());
        let text = "//! Seam role: definition (layer 0) — the runtime.\n";
        assert!(rules(text, Some(Role::Definition { layer: 0 })).is_empty());
    }

    #[test]
    fn refuses_missing_docs_wrong_and_repeated_roles() {
        assert_eq!(
            rules("// licence\n//! Seam role: root\n", Some(Role::Root)),
            ["src/lib.rs:1: crate-docs/missing"]
        );
        assert_eq!(
            rules("#![forbid(unsafe_code)]\n", Some(Role::Root)),
            ["src/lib.rs:1: crate-docs/missing"]
        );
        assert_eq!(
            rules(
                "//! Intro.\n//! Seam role: consumer\n",
                Some(Role::Provider)
            ),
            ["src/lib.rs:2: crate-docs/role"]
        );
        assert_eq!(
            rules("//! No role here.\n", Some(Role::Provider)),
            ["src/lib.rs: crate-docs/role"]
        );
        assert_eq!(
            rules(
                "//! Seam role: root\n//! Seam role: root\n",
                Some(Role::Root)
            ),
            ["src/lib.rs:2: crate-docs/role"]
        );
        // Only the leading block counts, and the word must end at a boundary.
        assert_eq!(
            rules("//! Docs.\n\n//! Seam role: root\n", Some(Role::Root)),
            ["src/lib.rs: crate-docs/role"]
        );
        assert_eq!(
            rules("//! Seam role: rooted\n", Some(Role::Root)),
            ["src/lib.rs: crate-docs/role"]
        );
    }
}
