//! `i18n list`: one row per non-excluded English document with its pairing status.

use serde_json::json;

use crate::diag::{Format, Printer, Rule};
use crate::error::XtaskError;
use crate::i18n::{self, manifest::Manifest, record::twin_of};
use crate::repo::Repo;

const ORDER: [&str; 5] = [
    "broken",
    "out-of-sync",
    "missing (required)",
    "missing (backlog)",
    "ok",
];

/// Prints the table; always exits 0 (configuration errors still exit 2).
pub fn run(repo: &Repo, printer: &mut Printer) -> Result<u8, XtaskError> {
    let manifest = Manifest::load(repo)?;
    let (diags, _) = i18n::check(repo, &manifest, None)?;
    let mut rows: Vec<(usize, String)> = Vec::new();
    let english: Vec<String> = repo
        .documents()
        .filter(|p| !p.ends_with(".zh.md") && !manifest.is_excluded(p))
        .map(str::to_owned)
        .collect();
    for path in english {
        let mine: Vec<Rule> = diags
            .iter()
            .filter(|d| {
                d.path == path
                    || d.path == twin_of(&path)
                    || d.path == i18n::record::record_of(&path)
            })
            .map(|d| d.rule)
            .collect();
        let status = if mine.iter().any(|r| {
            matches!(
                r,
                Rule::I18nIncompletePair | Rule::I18nUnlistedPair | Rule::I18nMalformedRecord
            )
        }) {
            0
        } else if !mine.is_empty() && repo.exists(&twin_of(&path)) {
            1
        } else if !repo.exists(&twin_of(&path)) {
            if manifest.is_required(&path) { 2 } else { 3 }
        } else {
            4
        };
        rows.push((status, path));
    }
    rows.sort();
    let mut counts = [0usize; 5];
    for (status, path) in &rows {
        counts[*status] += 1;
        if printer.format == Format::Json {
            let _ = printer.json(json!({"type": "pair", "path": path, "status": ORDER[*status]}));
        } else {
            let _ = writeln!(printer.out, "{}  {path}", ORDER[*status]);
        }
    }
    if printer.format == Format::Human {
        let summary: Vec<String> = ORDER
            .iter()
            .zip(counts)
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        let _ = writeln!(
            printer.out,
            "{} documents: {}",
            rows.len(),
            summary.join(", ")
        );
    }
    Ok(0)
}
