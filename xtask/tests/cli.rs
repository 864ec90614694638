//! The command line and the output contract: usage errors, flags, sorting,
//! JSON and quiet modes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;

use support::{diagnostics, good_copy, run, run_argv, snapshot};

/// Xtask is a lib plus a bin, never published.
#[test]
fn xtask_has_lib_and_bin_targets_and_is_not_published() {
    let meta = support::metadata();
    let xtask = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "xtask")
        .unwrap();
    let kinds: Vec<&str> = xtask["targets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["kind"].as_array().unwrap())
        .map(|k| k.as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"lib") && kinds.contains(&"bin"),
        "{kinds:?}"
    );
    assert_eq!(xtask["publish"], serde_json::json!([]), "publish = false");
}

/// Unknown commands and flags, and a missing command, are usage errors that touch
/// nothing.
#[test]
fn bad_command_lines_exit_2_with_usage_and_write_nothing() {
    let tmp = good_copy();
    let before = snapshot(tmp.path());
    for args in [
        &["chek"][..],
        &["deps", "--frobnicate"],
        &[],
        &["ci", "extra"],
        &["--message-format", "xml", "deps"],
    ] {
        let out = run(tmp.path(), args, None);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("Usage"), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(before, snapshot(tmp.path()));
}

#[test]
fn help_goes_to_stdout_and_exits_0() {
    let out = run_argv(vec!["xtask".into(), "--help".into()], None);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.contains("deps") && out.stdout.contains("ci"),
        "{}",
        out.stdout
    );
}

/// `--root` must name an existing directory.
#[test]
fn a_missing_root_is_an_error() {
    let out = run(
        std::path::Path::new("/nonexistent/dsh-root"),
        &["deps"],
        None,
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.starts_with("error: "), "{}", out.stderr);
    assert!(
        out.stderr.contains("/nonexistent/dsh-root"),
        "{}",
        out.stderr
    );
}

/// An invalid `XTASK_TODAY` is an environment error, checked by the real binary.
#[test]
fn an_invalid_xtask_today_exits_2() {
    let tmp = good_copy();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["--root"])
        .arg(tmp.path())
        .arg("deps")
        .env("XTASK_TODAY", "2026-02-30")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: XTASK_TODAY: 2026-02-30 does not exist"),
        "{stderr}"
    );
}

/// A tree with violations in several files, created in reverse path order.
fn three_bad_crates() -> tempfile::TempDir {
    let tmp = good_copy();
    for (krate, text) in [
        ("tool-bash", "//! Nothing.\n"),
        ("shell-local", "// licence\n"),
        (
            "llm-openai",
            "//! Seam role: consumer\n//! Seam role: provider\n",
        ),
    ] {
        // Keep the stub's `use` lines: the crates still name their dependencies.
        let path = tmp.path().join(format!("crates/{krate}/src/lib.rs"));
        let uses: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("use "))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(path, format!("{text}{uses}")).unwrap();
    }
    tmp
}

/// Diagnostics are sorted by path, absent line first, then line, rule and message.
#[test]
fn diagnostics_are_printed_sorted() {
    let tmp = three_bad_crates();
    let out = run(tmp.path(), &["deps"], None);
    assert_eq!(out.code, 1);
    assert_eq!(
        diagnostics(&out.stderr),
        [
            "crates/llm-openai/src/lib.rs:1: crate-docs/role",
            "crates/llm-openai/src/lib.rs:2: crate-docs/role",
            "crates/shell-local/src/lib.rs:1: crate-docs/missing",
            "crates/tool-bash/src/lib.rs: crate-docs/role",
        ]
    );
}

/// JSON mode puts only JSON objects on stdout, with the same verdict.
#[test]
fn json_mode_prints_only_json_on_stdout() {
    let tmp = three_bad_crates();
    let out = run(tmp.path(), &["deps", "--message-format", "json"], None);
    assert_eq!(out.code, 1);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let objects: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let diags: Vec<_> = objects
        .iter()
        .filter(|o| o["type"] == "diagnostic")
        .collect();
    assert_eq!(diags.len(), 4);
    assert_eq!(diags[0]["gate"], "crate-docs");
    assert_eq!(diags[0]["rule"], "crate-docs/role");
    assert_eq!(diags[0]["path"], "crates/llm-openai/src/lib.rs");
    assert_eq!(diags[0]["line"], 1);
    assert_eq!(diags[3]["line"], serde_json::Value::Null);
    assert!(diags[0]["message"].as_str().unwrap().contains("consumer"));
    let summaries: Vec<_> = objects.iter().filter(|o| o["type"] == "summary").collect();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[1]["gate"], "crate-docs");
    assert_eq!(summaries[1]["violations"], 4);
    assert_eq!(summaries[0]["checked"], 11);
}

/// `-q` silences a clean run completely; without it, summaries go to stderr.
#[test]
fn quiet_mode_and_summaries() {
    let tmp = good_copy();
    let quiet = run(tmp.path(), &["-q", "deps"], None);
    assert_eq!(
        (quiet.code, quiet.stdout.as_str(), quiet.stderr.as_str()),
        (0, "", "")
    );
    let loud = run(tmp.path(), &["deps"], None);
    assert_eq!(loud.code, 0);
    assert!(loud.stdout.is_empty());
    assert_eq!(loud.stderr.lines().count(), 2);
    // -q never hides diagnostics.
    let bad = three_bad_crates();
    let quiet_bad = run(bad.path(), &["deps", "--quiet"], None);
    assert_eq!(diagnostics(&quiet_bad.stderr).len(), 4);
    assert_eq!(quiet_bad.stderr.lines().count(), 4);
}
