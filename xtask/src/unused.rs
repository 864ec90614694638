//! The `deps/unused` rule: a declared dependency that no source file of the crate names.
//!
//! A dependency is used when its crate name (its rename, or its package name with `-` read as
//! `_`) appears as a path (`name::…`), in `use name`, or in `extern crate name`, anywhere in
//! the package's Rust files — doc tests included, nested packages (fixture workspaces)
//! excluded. A dependency declared only to turn on features of another crate names nothing;
//! such a one is listed under `[package.metadata.dsh] feature-only = ["name"]` with a comment
//! saying why, so the exception is reviewed like any other line.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::cargo::Package;
use crate::error::XtaskError;
use crate::repo::{Repo, Text};
use crate::rfc::re;

/// `name::` — a path through a crate.
static PATH_ROOT: LazyLock<Regex> = LazyLock::new(|| re(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*::"));
/// `use name` and `extern crate name`.
static USE_ROOT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:use|extern\s+crate)\s+(?:::)?([A-Za-z_][A-Za-z0-9_]*)"));

/// The crate names the package's Rust files mention as paths, `use` roots or extern crates.
pub struct Mentions {
    names: BTreeSet<String>,
}

impl Mentions {
    /// Reads every Rust file under `dir` (a package's directory, ending in `/`) that lies in
    /// none of the `nested` packages' directories.
    pub fn of(repo: &Repo, dir: &str, nested: &[String]) -> Result<Mentions, XtaskError> {
        let files: Vec<String> = repo
            .scanned_files()
            .filter(|p| p.ends_with(".rs") && p.starts_with(dir))
            .filter(|p| !nested.iter().any(|n| p.starts_with(n.as_str())))
            .map(str::to_owned)
            .collect();
        let mut names = BTreeSet::new();
        for path in files {
            let Text::Utf8(text) = repo.text(&path)? else {
                continue;
            };
            collect(&PATH_ROOT, &text, &mut names);
            collect(&USE_ROOT, &text, &mut names);
        }
        Ok(Mentions { names })
    }

    /// Whether the dependency declared under `key` (its rename or package name) is named.
    pub fn names(&self, key: &str) -> bool {
        self.names.contains(&key.replace('-', "_"))
    }
}

fn collect(pattern: &Regex, text: &str, names: &mut BTreeSet<String>) {
    for found in pattern.captures_iter(text) {
        if let Some(name) = found.get(1) {
            names.insert(name.as_str().to_owned());
        }
    }
}

/// The dependencies `package` declares only for their features, from
/// `[package.metadata.dsh] feature-only`.
pub fn feature_only(package: &Package) -> Vec<String> {
    package
        .metadata
        .pointer("/dsh/feature-only")
        .and_then(serde_json::Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
