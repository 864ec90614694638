//! The fixture suite: every case under `fixtures/cases/<gate>/<name>/` is a
//! copy of a base tree plus an overlay, run in process; its exit code and the exact sorted set
//! of `path[:line]: gate/rule` lines must match `case.toml`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use support::{copy_tree, diagnostics, fixtures, run};
use xtask::Rule;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    base: String,
    args: Vec<String>,
    #[serde(default)]
    remove: Vec<String>,
    /// Pairs to re-record after overlaying, before the action.
    #[serde(default)]
    record: Vec<String>,
    today: Option<String>,
    exit: u8,
    expect: Vec<String>,
    /// Substrings stderr must contain (messages worth pinning).
    #[serde(default)]
    stderr_contains: Vec<String>,
}

fn cases() -> Vec<(String, PathBuf, Case)> {
    let root = fixtures().join("cases");
    let mut found = Vec::new();
    for gate in std::fs::read_dir(&root).unwrap() {
        let gate = gate.unwrap();
        for case in std::fs::read_dir(gate.path()).unwrap() {
            let dir = case.unwrap().path();
            let text = std::fs::read_to_string(dir.join("case.toml"))
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let parsed: Case =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let name = format!(
                "{}/{}",
                gate.file_name().to_string_lossy(),
                dir.file_name().unwrap().to_string_lossy()
            );
            found.push((name, dir, parsed));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// A case named for a byte property must carry it in its overlay, so no editor or checkout
/// can normalise a fixture into a false pass.
fn check_bytes(name: &str, dir: &Path) -> Result<(), String> {
    type ByteTest = fn(&[u8]) -> bool;
    let want: Option<(&str, ByteTest)> = if name.ends_with("-crlf") {
        Some(("a CRLF", |b| b.windows(2).any(|w| w == b"\r\n")))
    } else if name.ends_with("-bom") {
        Some(("a BOM", |b| b.starts_with("\u{feff}".as_bytes())))
    } else if name.ends_with("-not-utf8") {
        Some(("invalid UTF-8", |b| std::str::from_utf8(b).is_err()))
    } else {
        None
    };
    let Some((what, test)) = want else {
        return Ok(());
    };
    let mut stack = vec![dir.join("overlay")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if test(&std::fs::read(&path).map_err(|e| e.to_string())?) {
                return Ok(());
            }
        }
    }
    Err(format!("no overlay file carries {what}"))
}

fn run_case(dir: &Path, case: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    match case.base.as_str() {
        "good" => copy_tree(&fixtures().join("good"), tmp.path()),
        "empty" => {}
        other => return Err(format!("unknown base {other:?}")),
    }
    let overlay = dir.join("overlay");
    if overlay.is_dir() {
        copy_tree(&overlay, tmp.path());
    }
    for path in &case.remove {
        let target = tmp.path().join(path);
        if target.is_dir() {
            std::fs::remove_dir_all(target).unwrap();
        } else {
            std::fs::remove_file(target).unwrap();
        }
    }
    if !case.record.is_empty() {
        let mut args = vec!["-q", "i18n", "record"];
        args.extend(case.record.iter().map(String::as_str));
        let out = run(tmp.path(), &args, case.today.as_deref());
        if out.code != 0 {
            return Err(format!("record failed: {}", out.stderr));
        }
    }
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let out = run(tmp.path(), &args, case.today.as_deref());
    let got: BTreeSet<String> = diagnostics(&out.stderr).into_iter().collect();
    let want: BTreeSet<String> = case.expect.iter().cloned().collect();
    let mut problems = Vec::new();
    if out.code != case.exit {
        problems.push(format!("exit {} (want {})", out.code, case.exit));
    }
    if got != want {
        problems.push(format!(
            "unexpected: {:?}; missing: {:?}",
            got.difference(&want).collect::<Vec<_>>(),
            want.difference(&got).collect::<Vec<_>>()
        ));
    }
    for needle in &case.stderr_contains {
        if !out.stderr.contains(needle.as_str()) {
            problems.push(format!("stderr lacks {needle:?}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n--- stderr ---\n{}",
            problems.join("\n"),
            out.stderr
        ))
    }
}

#[test]
fn every_case_matches_its_expectation() {
    let cases = cases();
    assert!(!cases.is_empty());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, dir, case)| {
            check_bytes(name, dir)
                .and_then(|()| run_case(dir, case))
                .err()
                .map(|e| format!("## {name}\n{e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The baseline is silent.
#[test]
fn the_baseline_is_silent() {
    let tmp = support::good_copy();
    let docs = run(tmp.path(), &["docs", "check"], None);
    assert_eq!(docs.code, 0, "{}", docs.stderr);
    assert!(diagnostics(&docs.stderr).is_empty(), "{}", docs.stderr);
    let gates: Vec<&str> = docs
        .stderr
        .lines()
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        gates,
        [
            "files",
            "rfc-tree",
            "rfc-format",
            "rfc-index",
            "i18n",
            "md-links",
            "md-wrap",
            "doc-refs",
            "doc-budgets"
        ]
    );
    let out = run(tmp.path(), &["deps"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(diagnostics(&out.stderr).is_empty(), "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "deps: 11 file(s) checked, 0 violation(s)\ncrate-docs: 10 file(s) checked, 0 violation(s)\n"
    );
}

/// Every rule is proven to fire by at least one case.
#[test]
fn every_rule_fires_in_some_case() {
    let expected: BTreeSet<String> = cases()
        .iter()
        .flat_map(|(_, _, c)| c.expect.iter())
        .filter_map(|e| e.rsplit(": ").next().map(str::to_owned))
        .collect();
    // A name that is not UTF-8 cannot be committed as a fixture; `odd_input.rs` creates one.
    let proven_elsewhere = ["files/name-not-utf8"];
    let missing: Vec<&str> = Rule::ALL
        .iter()
        .map(|r| r.id())
        .filter(|id| !expected.contains(*id) && !proven_elsewhere.contains(id))
        .collect();
    assert!(missing.is_empty(), "rules no case proves: {missing:?}");
}

/// Expectations are sorted, unique and well formed.
#[test]
fn expectations_are_sorted_unique_and_well_formed() {
    for (name, _, case) in cases() {
        let mut sorted = case.expect.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted, case.expect,
            "{name}: expect must be sorted and unique"
        );
        for e in &case.expect {
            let (head, rule) = e.rsplit_once(": ").unwrap_or_else(|| panic!("{name}: {e}"));
            assert!(
                Rule::ALL.iter().any(|r| r.id() == rule),
                "{name}: unknown rule in {e}"
            );
            if let Some((path, line)) = head.rsplit_once(':') {
                assert!(!path.is_empty(), "{name}: {e}");
                line.parse::<u32>()
                    .unwrap_or_else(|_| panic!("{name}: bad line in {e}"));
            }
        }
        assert!(case.exit <= 2, "{name}");
    }
}
