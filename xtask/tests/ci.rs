//! `cargo xtask ci`, run as the real binary against a copy of the baseline
//! with `CARGO` pointing at a stub that logs each call and forwards `metadata` to real cargo.
//! Never run against the real repository: its `test` step would recurse.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Stub {
    dir: tempfile::TempDir,
    root: tempfile::TempDir,
}

impl Stub {
    fn new() -> Stub {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("cargo");
        std::fs::write(
            &script,
            r#"#!/bin/sh
echo "$(pwd -P)|$*" >> "$STUB_LOG"
if [ "$1" = metadata ]; then exec "$REAL_CARGO" "$@"; fi
env | grep -E '^CARGO_(MANIFEST|PKG|CRATE)_' >> "$STUB_LOG.env"
echo "stub stdout for $1"
if [ "$1" = "$STUB_FAIL" ]; then exit 3; fi
exit 0
"#,
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Stub {
            dir,
            root: support::good_copy(),
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn run(&self, cargo: &Path, fail: &str, extra: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("--root")
            .arg(self.root.path())
            .arg("ci")
            .args(extra)
            .env("CARGO", cargo)
            .env("REAL_CARGO", support::cargo())
            .env("STUB_LOG", self.log_path())
            .env("STUB_FAIL", fail)
            // As `cargo xtask` (`cargo run -p xtask`) sets them for xtask.
            .env("CARGO_MANIFEST_DIR", "/somewhere/xtask")
            .env("CARGO_PKG_NAME", "xtask")
            .output()
            .unwrap()
    }

    fn run_stub(&self, fail: &str, extra: &[&str]) -> Output {
        self.run(&self.dir.path().join("cargo"), fail, extra)
    }

    /// The logged calls other than the forwarded `metadata`.
    fn steps(&self) -> Vec<String> {
        let root = self.root.path().canonicalize().unwrap();
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let (cwd, args) = line.split_once('|').unwrap();
                assert_eq!(Path::new(cwd), root, "every step runs from the root");
                args.to_owned()
            })
            .filter(|args| !args.starts_with("metadata"))
            .collect()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every step runs, exactly these commands, in order, from the root.
#[test]
fn all_steps_pass() {
    let stub = Stub::new();
    let out = stub.run_stub("none", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stub.steps(),
        [
            "fmt --all -- --check",
            "clippy --workspace --all-targets --locked -- -D warnings",
            "test --workspace --locked",
        ]
    );
    for step in ["fmt", "clippy", "test", "docs", "deps"] {
        assert!(stderr.contains(&format!("ci: {step} ok (")), "{stderr}");
    }
    assert!(stderr.contains("ci: 0 of 5 steps failed"), "{stderr}");
    let leaked = std::fs::read_to_string(stub.log_path().with_extension("env")).unwrap_or_default();
    assert!(
        leaked.is_empty(),
        "what `cargo run` set for xtask reaches no build: {leaked}"
    );
}

/// A failed step does not stop the others.
#[test]
fn a_failed_step_does_not_stop_the_rest() {
    let stub = Stub::new();
    let out = stub.run_stub("fmt", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stub.steps().len(), 3);
    assert!(stderr.contains("ci: fmt FAILED ("), "{stderr}");
    assert!(stderr.contains("ci: deps ok ("), "{stderr}");
    assert!(stderr.contains("ci: 1 of 5 steps failed"), "{stderr}");
}

/// `--fail-fast` stops after the first failure and reports the rest skipped.
#[test]
fn fail_fast_skips_the_rest() {
    let stub = Stub::new();
    let out = stub.run_stub("fmt", &["--fail-fast"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stub.steps(), ["fmt --all -- --check"]);
    for step in ["clippy", "test", "docs", "deps"] {
        assert!(
            stderr.contains(&format!("ci: {step} skipped (")),
            "{stderr}"
        );
    }
}

/// A cargo that cannot start is an environment error.
#[test]
fn a_missing_cargo_exits_2() {
    let stub = Stub::new();
    let out = stub.run(Path::new("/nonexistent/cargo"), "none", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("error: cargo could not run"), "{stderr}");
}

/// JSON mode keeps stdout pure; child output moves to stderr.
#[test]
fn json_mode_keeps_stdout_json() {
    let stub = Stub::new();
    let out = stub.run_stub("none", &["--message-format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let objects: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let steps: Vec<_> = objects.iter().filter(|o| o["type"] == "step").collect();
    assert_eq!(steps.len(), 5);
    assert_eq!(steps[0]["step"], "fmt");
    assert_eq!(steps[0]["status"], "ok");
    assert!(text(&out.stderr).contains("stub stdout for fmt"));
}

/// A broken link fails the `docs` step and the run.
#[test]
fn a_broken_link_fails_the_docs_step() {
    let stub = Stub::new();
    std::fs::write(
        stub.root.path().join("docs/broken.md"),
        "# Broken\n\n[gone](gone.md)\n",
    )
    .unwrap();
    let out = stub.run_stub("none", &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ci: docs FAILED ("), "{stderr}");
    assert!(
        stderr.contains("docs/broken.md:3: md-links/target"),
        "{stderr}"
    );
}
