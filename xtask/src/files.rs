//! The `files` gate: documents, sources and records must be UTF-8, and every path's name
//! too; a file that is not is reported once here and skipped by every other gate.

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::{Repo, Text};

/// Runs the gate over the scanned `.md`, `.rs` and `.i18n.yaml` files.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut out = Vec::new();
    let mut checked = 0;
    let paths: Vec<String> = repo
        .scanned_files()
        .filter(|p| p.ends_with(".md") || p.ends_with(".rs") || p.ends_with(".i18n.yaml"))
        .map(str::to_owned)
        .collect();
    for path in repo.unnamed() {
        out.push(Diagnostic::new(
            Rule::FilesNameNotUtf8,
            path,
            None,
            "the name is not UTF-8 (shown with replacement characters); rename it".into(),
        ));
    }
    for path in paths {
        checked += 1;
        if let Text::NotUtf8 = repo.text(&path)? {
            out.push(Diagnostic::new(
                Rule::FilesNotUtf8,
                path,
                None,
                "file is not UTF-8; save it as UTF-8".into(),
            ));
        }
    }
    Ok((out, checked))
}
