//! The `rfc-format` gate: header block, sections per lifecycle, alternatives, retired
//! markers. Content scans use the prose view, so a document may quote the format in a fence.

use std::sync::LazyLock;

use regex::Regex;

use super::tree::{Rfc, Twin};
use super::{format_adopted, re, required_sections, status_hint, status_ok};
use crate::diag::{Diagnostic, Rule};
use crate::views::Views;

static TITLE_LINE: LazyLock<Regex> = LazyLock::new(|| re(r"^# RFC: \S(.*\S)?$"));
/// Proposal-era section names, matched on the rendered heading however it is written.
static BANNED: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^(proposal|plan|migration\s+plan|acceptance\s+criteria)\b"));
/// The retired debt marker in any spelling: case, spacing, hyphens and brackets vary.
static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\bxxx\b[\s:(\[-]*legacy[\s_-]*(?:adr\s*/\s*rfc[\s_-]*)?(?:body[\s_-]*)?format")
});

/// The grandfather comment: admits a pre-format RFC has no recoverable alternatives.
pub const GRANDFATHER: &str = "<!-- rfc-format: alternatives-not-recorded (pre-format RFC) -->";
/// The scaffold's placeholder prefix.
pub const PLACEHOLDER: &str = "<!-- rfc-new:";

/// Checks every RFC that passed the tree, and every twin's header.
pub fn check(rfcs: &[Rfc], twins: &[Twin]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for rfc in rfcs {
        check_rfc(rfc, &mut out);
    }
    for twin in twins {
        check_twin(twin, &mut out);
    }
    out
}

/// A CR or a BOM is the only finding for a file.
fn encoding(path: &str, text: &str, out: &mut Vec<Diagnostic>) -> bool {
    if let Some(pos) = text.find('\r') {
        let line = text[..pos].matches('\n').count() + 1;
        out.push(Diagnostic::new(
            Rule::FmtLineEndings,
            path,
            u32::try_from(line).ok(),
            "carriage return found; save the file with LF line endings".into(),
        ));
        return false;
    }
    if text.starts_with('\u{feff}') {
        out.push(Diagnostic::new(
            Rule::FmtBom,
            path,
            Some(1),
            "drop the byte-order mark".into(),
        ));
        return false;
    }
    true
}

fn check_rfc(rfc: &Rfc, out: &mut Vec<Diagnostic>) {
    let path = rfc.path.as_str();
    if !encoding(path, &rfc.text, out) {
        return;
    }
    let views = Views::new(&rfc.text);
    let line = |n: usize| views.lines.get(n - 1).copied().unwrap_or("");
    let mut diag = |rule, line: Option<u32>, message: String| {
        out.push(Diagnostic::new(rule, path, line, message));
    };
    if !TITLE_LINE.is_match(line(1)) {
        diag(
            Rule::FmtTitleLine,
            Some(1),
            "the title line has the form \"# RFC: <title>\"".into(),
        );
    }
    if !line(2).is_empty() {
        diag(Rule::FmtBlankLine2, Some(2), "leave line 2 empty".into());
    }
    if !status_ok(rfc.lifecycle, line(3)) {
        diag(
            Rule::FmtStatusLine,
            Some(3),
            format!(
                "this file is in {}/, so line 3 is \"{}\"",
                rfc.lifecycle,
                status_hint(rfc.lifecycle)
            ),
        );
    }
    if !line(4).is_empty() {
        diag(Rule::FmtBlankLine4, Some(4), "leave line 4 empty".into());
    }

    let mut grandfather: Option<u32> = None;
    for (n, text) in views.prose_lines() {
        if n != 3 && text.starts_with("Status:") {
            diag(
                Rule::FmtDuplicateStatus,
                Some(n),
                "a second \"Status:\" line; the status lives on line 3 only".into(),
            );
        }
        if text == GRANDFATHER && grandfather.is_none() {
            grandfather = Some(n);
        }
        if LEGACY.is_match(text) {
            diag(
                Rule::FmtLegacyMarker,
                Some(n),
                "the legacy-format marker is retired; fix the body instead".into(),
            );
        }
        if text.contains(PLACEHOLDER) {
            diag(
                Rule::FmtPlaceholder,
                Some(n),
                "scaffold placeholder still here; write the section".into(),
            );
        }
    }

    // Sections are the H2s a reader sees; a required one counts only when written the
    // canonical way, so the format stays uniform and a look-alike cannot stand in for it.
    match views.h2s.first() {
        Some(h) if h.canonical() == Some("Problem") => {}
        Some(h) => diag(
            Rule::FmtFirstSection,
            Some(h.line),
            format!(
                "the first section is {:?}; open with \"## Problem\"",
                h.source
            ),
        ),
        None => diag(
            Rule::FmtFirstSection,
            None,
            "the first section is <none>; open with \"## Problem\"".into(),
        ),
    }
    let has = |name: &str| {
        let name = name.strip_prefix("## ").unwrap_or(name);
        views.h2s.iter().any(|h| h.canonical() == Some(name))
    };
    for section in required_sections(rfc.lifecycle) {
        if *section != "## Alternatives considered" && !has(section) {
            diag(
                Rule::FmtMissingSection,
                None,
                format!("{} RFCs have a {section:?} section", rfc.lifecycle),
            );
        }
    }
    if rfc.lifecycle == "implemented" {
        for h in &views.h2s {
            if BANNED.is_match(&h.text) {
                diag(
                    Rule::FmtBannedSection,
                    Some(h.line),
                    format!(
                        "{:?} is proposal language; move its content into Decision, Consequences or Testing",
                        h.source
                    ),
                );
            }
        }
    }
    match (has("## Alternatives considered"), grandfather) {
        (true, None) => {}
        (true, Some(n)) => diag(
            Rule::FmtAlternativesDuplicate,
            Some(n),
            "the \"## Alternatives considered\" section exists, so delete the grandfather comment"
                .into(),
        ),
        (false, Some(n)) if rfc.date >= format_adopted() => diag(
            Rule::FmtGrandfatherTooNew,
            Some(n),
            format!(
                "the grandfather comment is for RFCs older than {}; write the \"## Alternatives considered\" section",
                format_adopted()
            ),
        ),
        (false, Some(_)) => {}
        (false, None) => diag(
            Rule::FmtAlternativesMissing,
            None,
            "no \"## Alternatives considered\" section; say what was given up and why".into(),
        ),
    }
}

/// A twin translates the title but keeps the header's shape and status tokens.
fn check_twin(twin: &Twin, out: &mut Vec<Diagnostic>) {
    if !encoding(&twin.path, &twin.text, out) {
        return;
    }
    let lines: Vec<&str> = twin.text.split('\n').collect();
    let line = |n: usize| lines.get(n - 1).copied().unwrap_or("");
    let failing = if !(line(1).starts_with("# RFC: ")
        && line(1)[7..].starts_with(|c: char| !c.is_whitespace()))
    {
        Some((1, "twin line 1 must be \"# RFC: <translated title>\""))
    } else if !line(2).is_empty() {
        Some((2, "twin line 2 must be empty"))
    } else if !status_ok(twin.lifecycle, line(3)) {
        Some((3, "twin line 3 must repeat the status line of its folder"))
    } else if !line(4).is_empty() {
        Some((4, "twin line 4 must be empty"))
    } else {
        None
    };
    if let Some((n, message)) = failing {
        out.push(Diagnostic::new(
            Rule::FmtZhHeader,
            twin.path.as_str(),
            Some(n),
            message.into(),
        ));
    }
}
