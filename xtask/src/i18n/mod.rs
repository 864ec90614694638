//! The `i18n` gate: an English document, its Chinese twin and their record travel
//! together; a twin that drifts from its English side is caught by content hashes and by
//! structural signatures.

pub mod manifest;
pub mod record;
pub mod structure;

use std::collections::BTreeSet;

use manifest::Manifest;
use record::{basename, blob_id, record_of, twin_of};

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::{Repo, Text};

/// The English paths derived from every twin and record in the scanned set.
pub fn anchors(repo: &Repo) -> BTreeSet<String> {
    repo.scanned_files()
        .filter_map(|p| {
            p.strip_suffix(".zh.md")
                .or_else(|| p.strip_suffix(".i18n.yaml"))
                .map(|stem| format!("{stem}.md"))
        })
        .collect()
}

/// Runs the gate over the whole repository, or over `only` (English paths) when given.
/// Returns the diagnostics and the number of pairs checked.
pub fn check(
    repo: &Repo,
    manifest: &Manifest,
    only: Option<&BTreeSet<String>>,
) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let wanted = |p: &str| only.is_none_or(|o| o.contains(p));
    let mut out = Vec::new();
    let mut checked = 0;
    for required in manifest.required.iter().filter(|p| wanted(p)) {
        if !repo.exists(required) {
            out.push(Diagnostic::new(
                Rule::I18nRequiredMissingFile,
                required.as_str(),
                None,
                format!(
                    "{} requires this document, but it does not exist",
                    manifest::PATH
                ),
            ));
        } else if !repo.exists(&twin_of(required)) {
            out.push(Diagnostic::new(
                Rule::I18nMissingCounterpart,
                required.as_str(),
                None,
                format!(
                    "required pair lacks {} (and its record); translate it and run cargo xtask i18n record {required}",
                    basename(&twin_of(required))
                ),
            ));
        }
    }
    for anchor in anchors(repo).iter().filter(|p| wanted(p)) {
        checked += 1;
        check_anchor(repo, manifest, anchor, &mut out)?;
    }
    Ok((out, checked))
}

fn check_anchor(
    repo: &Repo,
    manifest: &Manifest,
    english: &str,
    out: &mut Vec<Diagnostic>,
) -> Result<(), XtaskError> {
    let twin = twin_of(english);
    let rec = record_of(english);
    if manifest.is_excluded(english) {
        if repo.exists(&twin) {
            out.push(Diagnostic::new(
                Rule::I18nExcludedHasCounterpart,
                twin.as_str(),
                None,
                "this document is never paired; remove its twin".into(),
            ));
        }
        if repo.exists(&rec) {
            out.push(Diagnostic::new(
                Rule::I18nExcludedHasRecord,
                rec.as_str(),
                None,
                "this document is never paired; remove its record".into(),
            ));
        }
        return Ok(());
    }
    let missing: Vec<&str> = [english, twin.as_str(), rec.as_str()]
        .into_iter()
        .filter(|p| !repo.exists(p))
        .collect();
    if !missing.is_empty() {
        out.push(Diagnostic::new(
            Rule::I18nIncompletePair,
            english,
            None,
            format!(
                "pair lacks: {}; the three files travel together",
                missing.join(", ")
            ),
        ));
        return Ok(());
    }
    if !manifest.is_required(english) {
        out.push(Diagnostic::new(
            Rule::I18nUnlistedPair,
            english,
            None,
            format!(
                "paired but not listed; add it to required in {}",
                manifest::PATH
            ),
        ));
    }
    let (Text::Utf8(en_text), Text::Utf8(zh_text), Text::Utf8(rec_text)) =
        (repo.text(english)?, repo.text(&twin)?, repo.text(&rec)?)
    else {
        return Ok(()); // `files/not-utf8` reports it
    };
    let Some((en_id, zh_id)) = record::parse(&rec_text, english) else {
        out.push(Diagnostic::new(
            Rule::I18nMalformedRecord,
            rec.as_str(),
            None,
            format!(
                "record must hold two lines, \"{}: <40 hex>\" and \"{}: <40 hex>\"",
                basename(english),
                basename(&twin)
            ),
        ));
        return Ok(());
    };
    let mut in_sync = true;
    for (path, text, recorded, other) in [
        (english, &en_text, &en_id, twin.as_str()),
        (twin.as_str(), &zh_text, &zh_id, english),
    ] {
        if blob_id(text.as_bytes()) != *recorded {
            in_sync = false;
            out.push(Diagnostic::new(
                Rule::I18nOutOfSync,
                path,
                None,
                format!(
                    "edited since the pair was confirmed; bring {other} along, then run cargo xtask i18n record {english}"
                ),
            ));
        }
    }
    let (Some((_, en_doc)), Some((_, zh_doc))) = (repo.markdown(english)?, repo.markdown(&twin)?)
    else {
        return Ok(());
    };
    for (path, doc, target) in [
        (english, &en_doc, basename(&twin)),
        (twin.as_str(), &zh_doc, basename(english)),
    ] {
        if !doc.links.iter().any(|l| l.dest == target) {
            out.push(Diagnostic::new(
                Rule::I18nMissingSwitcher,
                path,
                None,
                format!("add the language switcher link to {target}"),
            ));
        }
    }
    if in_sync {
        let en_sig = structure::signature(&en_doc, basename(&twin));
        let zh_sig = structure::signature(&zh_doc, basename(english));
        for (line, message) in structure::compare(&en_sig, &zh_sig, &twin) {
            out.push(Diagnostic::new(Rule::I18nStructure, english, line, message));
        }
    }
    Ok(())
}

/// Resolves a PAIR argument (any of the three files, or the stem) to its English path.
pub fn resolve(arg: &str) -> String {
    let arg = arg.trim_end_matches('/');
    if let Some(stem) = arg.strip_suffix(".zh.md") {
        format!("{stem}.md")
    } else if let Some(stem) = arg.strip_suffix(".i18n.yaml") {
        format!("{stem}.md")
    } else if arg.ends_with(".md") {
        arg.to_owned()
    } else {
        format!("{arg}.md")
    }
}

/// Every pair `record --all` confirms: non-excluded anchors and required entries whose
/// English file and twin both exist.
pub fn all_pairs(repo: &Repo, manifest: &Manifest) -> BTreeSet<String> {
    anchors(repo)
        .into_iter()
        .chain(manifest.required.iter().cloned())
        .filter(|p| !manifest.is_excluded(p) && repo.exists(p) && repo.exists(&twin_of(p)))
        .collect()
}

/// Writes the records of `pairs` (already validated); returns `(path, changed)` per pair.
pub fn write_records(
    repo: &Repo,
    pairs: &BTreeSet<String>,
) -> Result<Vec<(String, bool)>, XtaskError> {
    let mut results = Vec::new();
    for english in pairs {
        let read = |p: &str| std::fs::read(repo.root().join(p)).map_err(|e| XtaskError::io(p, e));
        let twin = twin_of(english);
        let bytes = record::canonical(english, &blob_id(&read(english)?), &blob_id(&read(&twin)?));
        let rec = record_of(english);
        let current = std::fs::read(repo.root().join(&rec)).ok();
        let changed = current.as_deref() != Some(bytes.as_bytes());
        if changed {
            crate::write::atomic(repo.root(), &rec, bytes.as_bytes())?;
        }
        results.push((rec, changed));
    }
    Ok(results)
}
