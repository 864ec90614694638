//! Path crates outside the workspace. A member may depend on a crate that is not a member
//! (excluded, or elsewhere on disk); `cargo metadata --no-deps` does not describe it, so its
//! manifest is read here and followed, so that an edge cannot be laundered through a shim.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::error::XtaskError;

/// A package reached through one or more non-member path crates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// The non-member crates passed through, outermost first.
    pub through: Vec<String>,
    /// The package reached (its real name, not a rename).
    pub package: String,
}

/// Everything the non-member path crate at `dir` (named `name`) ships with: its normal and
/// build dependencies, and theirs through further non-member path crates. Dev edges of a
/// path crate never reach a member's build. `is_member` stops the walk at members, which
/// the gate checks on their own.
pub fn reach(
    dir: &Path,
    name: &str,
    is_member: &dyn Fn(&str) -> bool,
) -> Result<Vec<Reached>, XtaskError> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut stack = vec![(dir.to_path_buf(), vec![name.to_owned()])];
    while let Some((dir, through)) = stack.pop() {
        // Canonical, so `a/../b` and `b` are one crate and a cycle ends.
        let dir = std::fs::canonicalize(&dir)
            .map_err(|e| XtaskError::io(dir.display().to_string(), e))?;
        if !seen.insert(dir.clone()) {
            continue;
        }
        for (package, path) in shipped(&dir)? {
            out.push(Reached {
                through: through.clone(),
                package: package.clone(),
            });
            if let Some(path) = path
                && !is_member(&package)
            {
                let mut next = through.clone();
                next.push(package);
                stack.push((dir.join(path), next));
            }
        }
    }
    out.sort_by(|a, b| (&a.package, &a.through).cmp(&(&b.package, &b.through)));
    Ok(out)
}

/// The normal and build dependencies the manifest in `dir` declares (for every target), with
/// their `path` when they have one.
fn shipped(dir: &Path) -> Result<Vec<(String, Option<PathBuf>)>, XtaskError> {
    let manifest = dir.join("Cargo.toml");
    let shown = manifest.display().to_string();
    let text = std::fs::read_to_string(&manifest).map_err(|e| XtaskError::io(&shown, e))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| XtaskError::config(&shown, e.to_string()))?;
    let mut scopes: Vec<&toml::Table> = vec![&table];
    if let Some(targets) = table.get("target").and_then(toml::Value::as_table) {
        scopes.extend(targets.values().filter_map(toml::Value::as_table));
    }
    let tables = scopes.into_iter().flat_map(|scope| {
        ["dependencies", "build-dependencies", "build_dependencies"]
            .into_iter()
            .filter_map(|section| scope.get(section).and_then(toml::Value::as_table))
    });
    let mut out = Vec::new();
    for deps in tables {
        for (key, spec) in deps {
            let detail = spec.as_table();
            let package = detail
                .and_then(|d| d.get("package"))
                .and_then(toml::Value::as_str)
                .unwrap_or(key);
            let path = detail
                .and_then(|d| d.get("path"))
                .and_then(toml::Value::as_str)
                .map(PathBuf::from);
            out.push((package.to_owned(), path));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn edges_are_followed_through_shims_but_not_into_members_or_dev_edges() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            "outer/Cargo.toml",
            "[package]\nname = \"outer\"\n\n[dependencies]\ninner = { path = \"../inner\" }\nmember = { path = \"../member\" }\n\n[dev-dependencies]\naxum = \"0.8\"\n",
        );
        write(
            root,
            "inner/Cargo.toml",
            "[package]\nname = \"inner\"\n\n[target.'cfg(unix)'.dependencies]\nweb = { package = \"tonic\", version = \"0.12\" }\n\n[build-dependencies]\nouter = { path = \"../outer\" }\n",
        );
        write(
            root,
            "member/Cargo.toml",
            "[package]\nname = \"member\"\n\n[dependencies]\nhidden = \"1\"\n",
        );
        let reached = reach(&root.join("outer"), "outer", &|n| n == "member").unwrap();
        let shown: Vec<(String, &str)> = reached
            .iter()
            .map(|r| (r.through.join(" -> "), r.package.as_str()))
            .collect();
        let want = [
            ("outer", "inner"),
            ("outer", "member"),
            ("outer -> inner", "outer"),
            ("outer -> inner", "tonic"),
        ]
        .map(|(a, b)| (a.to_owned(), b));
        assert_eq!(shown, want);
    }
}
