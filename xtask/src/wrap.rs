//! The `md-wrap` gate: a prose paragraph is one physical line; editors soft-wrap.

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::Repo;

/// Runs the gate over the document set.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let mut out = Vec::new();
    let docs = repo.parsed_documents()?;
    for (path, doc) in &docs {
        for block in &doc.wrapped {
            out.push(Diagnostic::new(
                Rule::WrapHardWrap,
                path.as_str(),
                Some(block.line),
                format!(
                    "paragraph runs over several lines; make it one: {:?}",
                    block.first
                ),
            ));
        }
    }
    Ok((out, docs.len()))
}
