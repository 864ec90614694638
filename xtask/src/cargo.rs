//! The workspace as `cargo metadata --no-deps` describes it: members, their declared
//! dependencies and targets, and `[workspace.metadata]`. No resolution and no network.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use crate::error::XtaskError;

/// The parts of `cargo metadata` output the gates read.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    /// Every workspace member (with `--no-deps`, only members are listed).
    pub packages: Vec<Package>,
    /// Ids of the members.
    pub workspace_members: Vec<String>,
    /// The root manifest's `[workspace.metadata]` table, or null.
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// One package.
#[derive(Debug, Deserialize)]
pub struct Package {
    /// Package name.
    pub name: String,
    /// Package id.
    pub id: String,
    /// Absolute path of its `Cargo.toml`.
    pub manifest_path: PathBuf,
    /// Declared dependencies, every kind and target.
    pub dependencies: Vec<Dependency>,
    /// Build targets.
    pub targets: Vec<Target>,
    /// Its `[package.metadata]` table, or null.
    #[serde(default)]
    pub metadata: serde_json::Value,
}

/// One declared dependency.
#[derive(Debug, Deserialize)]
pub struct Dependency {
    /// The dependency's package name (not its rename).
    pub name: String,
    /// The key it is declared under, when renamed.
    pub rename: Option<String>,
    /// `None` for normal, `"dev"` or `"build"`.
    pub kind: Option<String>,
    /// The `cfg(...)` or triple it is limited to.
    pub target: Option<String>,
    /// The directory of a path dependency.
    #[serde(default)]
    pub path: Option<PathBuf>,
}

/// One build target.
#[derive(Debug, Deserialize)]
pub struct Target {
    /// Target name.
    pub name: String,
    /// `lib`, `bin`, `test`, …
    pub kind: Vec<String>,
    /// Its root source file.
    pub src_path: PathBuf,
}

impl Metadata {
    /// Runs `<cargo> metadata --format-version 1 --no-deps --manifest-path <root>/Cargo.toml`.
    pub fn load(root: &Path, cargo: &OsStr) -> Result<Metadata, XtaskError> {
        let output = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--manifest-path",
            ])
            .arg(root.join("Cargo.toml"))
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| XtaskError::Cargo {
                status: None,
                stderr: format!("cannot start {}: {e}", cargo.to_string_lossy()),
            })?;
        if !output.status.success() {
            return Err(XtaskError::Cargo {
                status: output.status.code(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        serde_json::from_slice(&output.stdout).map_err(|e| XtaskError::Cargo {
            status: output.status.code(),
            stderr: format!("cargo metadata printed output xtask cannot read: {e}"),
        })
    }

    /// The members, in `workspace_members` order.
    pub fn members(&self) -> Vec<&Package> {
        self.workspace_members
            .iter()
            .filter_map(|id| self.packages.iter().find(|p| &p.id == id))
            .collect()
    }
}

impl Package {
    /// The crate root: the library target's source, else the binary named like the
    /// package, else the first binary.
    pub fn crate_root(&self) -> Option<&Path> {
        const LIB_KINDS: [&str; 6] = ["lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro"];
        let is_lib = |t: &&Target| t.kind.iter().any(|k| LIB_KINDS.contains(&k.as_str()));
        let is_bin = |t: &&Target| t.kind.iter().any(|k| k == "bin");
        self.targets
            .iter()
            .find(is_lib)
            .or_else(|| {
                self.targets
                    .iter()
                    .filter(is_bin)
                    .find(|t| t.name == self.name)
            })
            .or_else(|| self.targets.iter().find(is_bin))
            .map(|t| t.src_path.as_path())
    }
}

/// `path` relative to `root`, written with `/`. Cargo may report canonical paths, so the
/// canonical root is tried too.
pub fn relative(root: &Path, path: &Path) -> String {
    let rel = path
        .strip_prefix(root)
        .ok()
        .map(Path::to_path_buf)
        .or_else(|| {
            let canonical = root.canonicalize().ok()?;
            path.strip_prefix(canonical).ok().map(Path::to_path_buf)
        })
        .unwrap_or_else(|| path.to_path_buf());
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
