//! The documentation gates on input a committed fixture cannot carry or that once broke
//! them: names in other scripts and names that are not UTF-8, RFC bodies that are not UTF-8,
//! a repository without an RFC tree, and `-q`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use support::{diagnostics, good_copy, run, snapshot};

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn new_rfc(root: &Path, quiet: bool) -> support::Run {
    let mut args = vec![
        "rfc",
        "new",
        "proposed/feature/fresh-idea",
        "--title",
        "Fresh idea",
        "--date",
        "2026-12-01",
    ];
    if quiet {
        args.insert(0, "-q");
    }
    run(root, &args, None)
}

#[test]
fn names_in_other_scripts_are_findings_never_panics() {
    let tmp = good_copy();
    let root = tmp.path();
    let lint =
        std::fs::read(root.join("docs/rfc/implemented/process/2026-08-02-lint-docs.md")).unwrap();
    // A fullwidth digit in the date, and a name with no date at all.
    write(
        root,
        "docs/rfc/implemented/process/２026-08-07-wide.md",
        &lint,
    );
    write(
        root,
        "docs/rfc/implemented/process/メモ.md",
        b"# RFC: Memo\n",
    );
    write(root, "docs/rfc/メモ.txt", b"notes");
    let out = run(root, &["docs", "check"], None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let found = diagnostics(&out.stderr);
    for name in ["２026-08-07-wide.md", "メモ.md"] {
        let want = format!("docs/rfc/implemented/process/{name}: rfc-tree/filename");
        assert!(found.contains(&want), "{want} in {found:?}");
    }
    let out = new_rfc(root, false);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        root.join("docs/rfc/proposed/feature/2026-12-01-fresh-idea.md")
            .is_file()
    );
}

#[test]
fn a_repository_without_an_rfc_tree_has_nothing_to_index() {
    let tmp = good_copy();
    let root = tmp.path();
    std::fs::remove_dir_all(root.join("docs/rfc")).unwrap();
    // Nothing may link into the removed tree any more.
    for doc in [
        "README.md",
        "README.zh.md",
        "docs/guide.md",
        "docs/guide.zh.md",
    ] {
        let path = root.join(doc);
        let text = std::fs::read_to_string(&path).unwrap();
        let kept: String = text
            .lines()
            .filter(|l| !l.contains("rfc/"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&path, kept).unwrap();
    }
    let recorded = run(root, &["-q", "i18n", "record", "--all"], None);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let out = run(root, &["docs", "check", "--only", "rfc-index"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(diagnostics(&out.stderr).is_empty(), "{}", out.stderr);
    let before = snapshot(root);
    let out = run(root, &["rfc", "index"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("nothing to index"), "{}", out.stderr);
    let out = run(
        root,
        &["docs", "check", "--fix", "--only", "rfc-index"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(snapshot(root), before, "no index was created");
    assert!(!root.join("docs/rfc").exists());
}

#[test]
fn an_rfc_that_is_not_utf8_is_a_finding_and_keeps_its_index_row() {
    let tmp = good_copy();
    let root = tmp.path();
    let rfc = "docs/rfc/implemented/process/2026-08-02-lint-docs.md";
    let mut bytes = std::fs::read(root.join(rfc)).unwrap();
    bytes.extend_from_slice(b"\nLatin-1: caf\xe9\n");
    write(root, rfc, &bytes);
    let index = std::fs::read(root.join("docs/rfc/INDEX.md")).unwrap();

    let out = run(root, &["docs", "check"], None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    let found = diagnostics(&out.stderr);
    assert!(
        found.contains(&format!("{rfc}: files/not-utf8")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|d| d.contains("rfc-index/stale")),
        "the index is not stale for an RFC the gates cannot read: {found:?}"
    );
    for args in [
        &["rfc", "index"][..],
        &["docs", "check", "--fix"],
        &["rfc", "check", "--fix"],
    ] {
        let out = run(root, args, None);
        assert_eq!(out.code, 1, "{args:?}: {}", out.stderr);
        assert!(
            diagnostics(&out.stderr).contains(&format!("{rfc}: files/not-utf8")),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(
            std::fs::read(root.join("docs/rfc/INDEX.md")).unwrap(),
            index,
            "{args:?} rewrote the index"
        );
    }
}

#[test]
fn names_that_are_not_utf8_are_reported_and_every_gate_still_runs() {
    let tmp = good_copy();
    let root = tmp.path();
    let file = root.join("docs").join(OsStr::from_bytes(b"caf\xe9.md"));
    std::fs::write(&file, "# Caf\n").unwrap();
    let dir = root.join(OsStr::from_bytes(b"notes-\xff"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("inside.md"), "# Inside\n").unwrap();
    std::fs::write(dir.join(OsStr::from_bytes(b"\xfe.md")), "# Deeper\n").unwrap();

    let out = run(root, &["docs", "check"], None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        diagnostics(&out.stderr),
        [
            "docs/caf\u{fffd}.md: files/name-not-utf8",
            "notes-\u{fffd}: files/name-not-utf8",
        ],
        "the outermost unnamed path once each; {}",
        out.stderr
    );
    for gate in ["rfc-tree", "i18n", "md-links", "doc-budgets"] {
        assert!(
            out.stderr.contains(&format!("{gate}: ")),
            "{gate} did not run: {}",
            out.stderr
        );
    }
    for args in [&["rfc", "index"][..], &["i18n", "check"], &["rfc", "check"]] {
        let out = run(root, args, None);
        assert_ne!(out.code, 2, "{args:?}: {}", out.stderr);
    }
}

#[test]
fn quiet_rfc_new_prints_only_the_new_path() {
    let tmp = good_copy();
    let root = tmp.path();
    // A broken tree makes `rfc new` explain why it left the index alone — unless quiet.
    write(root, "docs/rfc/implemented/loose.md", b"# RFC: Loose\n");
    let out = new_rfc(root, true);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert_eq!(
        out.stdout,
        "docs/rfc/proposed/feature/2026-12-01-fresh-idea.md\n"
    );
}
