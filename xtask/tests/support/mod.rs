//! Helpers shared by xtask's integration tests: fixture trees, in-process runs, parsing.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use xtask::{Date, Rule, RunEnv};

/// `xtask/tests/fixtures`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The cargo running the tests, so fixtures use the pinned toolchain.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// `cargo metadata --no-deps` of the real workspace.
pub fn metadata() -> serde_json::Value {
    let out = std::process::Command::new(cargo())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--manifest-path",
        ])
        .arg(repo_root().join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Copies the tree at `from` into `to` (created if needed), files byte for byte.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary copy of the `good/` baseline.
pub fn good_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("good"), dir.path());
    dir
}

/// What one in-process run printed and returned.
#[derive(Debug)]
pub struct Run {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

/// Runs xtask in process with `--root <root>` prepended to `args`.
pub fn run(root: &Path, args: &[&str], today: Option<&str>) -> Run {
    let mut argv: Vec<OsString> = vec!["xtask".into(), "--root".into(), root.into()];
    argv.extend(args.iter().map(OsString::from));
    run_argv(argv, today)
}

/// Runs xtask in process with exactly `argv` (program name first).
pub fn run_argv(argv: Vec<OsString>, today: Option<&str>) -> Run {
    let env = RunEnv {
        today: Some(Date::parse(today.unwrap_or("2026-12-15")).unwrap()),
        cargo: Some(cargo()),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = xtask::run_with(argv, &env, &mut out, &mut err);
    Run {
        code,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
    }
}

/// The `path[:line]: gate/rule` part of every diagnostic line in human output.
pub fn diagnostics(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|line| {
            let (head, rest) = line.split_once(": ")?;
            let rule = rest.split(": ").next()?;
            Rule::ALL
                .iter()
                .any(|r| r.id() == rule)
                .then(|| format!("{head}: {rule}"))
        })
        .collect()
}

/// A snapshot of every file under `root` (path and bytes), to prove a run wrote nothing.
pub fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    files.sort();
    files
}
