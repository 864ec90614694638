//! `xtask/pairs.toml`: which English documents must be paired, and which never are.

use crate::error::XtaskError;
use crate::repo::{Repo, Text};

/// The pairing manifest's path.
pub const PATH: &str = "xtask/pairs.toml";

/// The validated manifest.
#[derive(Debug, Default)]
pub struct Manifest {
    pub required: Vec<String>,
    pub excluded: Vec<String>,
}

impl Manifest {
    /// Reads and validates the manifest; a missing one means both lists are empty.
    pub fn load(repo: &Repo) -> Result<Manifest, XtaskError> {
        if !repo.is_scanned_file(PATH) {
            return Ok(Manifest::default());
        }
        let Text::Utf8(text) = repo.text(PATH)? else {
            return Err(XtaskError::config(PATH, "not UTF-8"));
        };
        let err = |message: String| XtaskError::config(PATH, message);
        let table: toml::Table = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
        let mut manifest = Manifest::default();
        for (key, value) in &table {
            let list = match key.as_str() {
                "required" => &mut manifest.required,
                "excluded" => &mut manifest.excluded,
                other => {
                    return Err(err(format!(
                        "unknown key `{other}`; only `required` and `excluded` are allowed"
                    )));
                }
            };
            let array = value
                .as_array()
                .ok_or_else(|| err(format!("`{key}` must be an array of strings")))?;
            for item in array {
                let entry = item
                    .as_str()
                    .ok_or_else(|| err(format!("`{key}`: {item} is not a string")))?;
                if entry.is_empty()
                    || entry.starts_with('/')
                    || entry.split('/').any(|seg| seg == "..")
                {
                    return Err(err(format!(
                        "`{key}`: {entry:?} must be a relative path inside the repository"
                    )));
                }
                if key == "required" && (!entry.ends_with(".md") || entry.ends_with(".zh.md")) {
                    return Err(err(format!(
                        "`required`: {entry:?} must name an English .md document, not a twin"
                    )));
                }
                if list.iter().any(|e| e == entry) {
                    return Err(err(format!("`{key}`: {entry:?} is listed twice")));
                }
                list.push(entry.to_owned());
            }
        }
        if let Some(both) = manifest.required.iter().find(|r| manifest.is_excluded(r)) {
            return Err(err(format!("{both:?} is both required and excluded")));
        }
        Ok(manifest)
    }

    /// True when `path` is excluded (exact path, or under an excluded directory prefix).
    pub fn is_excluded(&self, path: &str) -> bool {
        self.excluded
            .iter()
            .any(|e| e == path || (e.ends_with('/') && path.starts_with(e.as_str())))
    }

    /// True when `path` is required.
    pub fn is_required(&self, path: &str) -> bool {
        self.required.iter().any(|r| r == path)
    }
}
