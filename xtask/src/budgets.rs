//! The `doc-budgets` gate: standing documents listed in `xtask/budgets.toml` stay under
//! a word ceiling, counted like `wc -w`.

use crate::diag::{Diagnostic, Rule};
use crate::error::XtaskError;
use crate::repo::{Repo, Text};

/// The budget manifest's path.
pub const PATH: &str = "xtask/budgets.toml";

/// One budget entry and its verdict.
pub struct Entry {
    pub path: String,
    /// The ceiling as written, for display.
    pub raw: String,
    pub ceiling: Option<u64>,
    pub line: Option<u32>,
    pub words: Option<usize>,
}

impl Entry {
    /// `ok`, `OVER`, `MISS` or `BAD`, as `docs budgets --list` prints it.
    pub fn status(&self) -> &'static str {
        match (self.ceiling, self.words) {
            (None, _) => "BAD",
            (_, None) => "MISS",
            (Some(c), Some(w)) if w as u64 > c => "OVER",
            _ => "ok",
        }
    }
}

/// Reads the manifest and counts the words of every budgeted file, sorted by path. A missing
/// manifest budgets nothing; a malformed one is a configuration error.
pub fn entries(repo: &Repo) -> Result<Vec<Entry>, XtaskError> {
    if !repo.is_scanned_file(PATH) {
        return Ok(Vec::new());
    }
    let Text::Utf8(text) = repo.text(PATH)? else {
        return Err(XtaskError::config(PATH, "not UTF-8"));
    };
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| XtaskError::config(PATH, e.to_string()))?;
    if let Some(other) = table.keys().find(|k| *k != "ceilings") {
        return Err(XtaskError::config(
            PATH,
            format!("unknown key `{other}`; the only key is `ceilings`"),
        ));
    }
    let Some(ceilings) = table.get("ceilings") else {
        return Ok(Vec::new());
    };
    let ceilings = ceilings
        .as_table()
        .ok_or_else(|| XtaskError::config(PATH, "`ceilings` must be a table of path = words"))?;
    let mut out = Vec::new();
    for (path, value) in ceilings {
        let ceiling = value.as_integer().filter(|n| *n > 0).map(|n| n as u64);
        let words = match repo.exists(path) {
            false => None,
            true => match repo.text(path)? {
                Text::Utf8(t) => Some(t.split_whitespace().count()),
                // `files/not-utf8` reports it; it is not counted here.
                Text::NotUtf8 => Some(0),
            },
        };
        out.push(Entry {
            path: path.clone(),
            raw: value.to_string(),
            ceiling,
            line: entry_line(&text, path),
            words,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn entry_line(text: &str, path: &str) -> Option<u32> {
    crate::toml_lines::TomlLines::parse(text)?.line(&["ceilings", path])
}

/// Runs the gate.
pub fn check(repo: &Repo) -> Result<(Vec<Diagnostic>, usize), XtaskError> {
    let entries = entries(repo)?;
    let mut out = Vec::new();
    for e in &entries {
        match (e.ceiling, e.words) {
            (None, _) => out.push(Diagnostic::new(
                Rule::BudgetBadCeiling,
                PATH,
                e.line,
                format!("ceiling {} for {} is not a positive whole number", e.raw, e.path),
            )),
            (_, None) => out.push(Diagnostic::new(
                Rule::BudgetMissingFile,
                e.path.as_str(),
                None,
                format!("has a budget but no file; fix {PATH} in the same change"),
            )),
            (Some(c), Some(w)) if w as u64 > c => out.push(Diagnostic::new(
                Rule::BudgetOver,
                e.path.as_str(),
                None,
                format!("{w} words against a ceiling of {c}; trim or move text (raising a ceiling needs a reason in the change)"),
            )),
            _ => {}
        }
    }
    Ok((out, entries.len()))
}
