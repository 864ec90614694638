//! The real repository passes its own gates and carries the files its gates and CI rely on.
//! `ci` is never run here: its `test` step would recurse.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::os::unix::fs::PermissionsExt;

use support::{diagnostics, metadata, repo_root, run};

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `cargo xtask` alias.
#[test]
fn cargo_config_defines_the_xtask_alias() {
    let config: toml::Table = toml::from_str(&read(".cargo/config.toml")).unwrap();
    assert_eq!(
        config["alias"]["xtask"].as_str(),
        Some("run --package xtask --")
    );
}

/// Xtask links no workspace crate, no async runtime and no YAML library.
#[test]
fn xtask_depends_on_no_member_runtime_or_yaml() {
    let meta = metadata();
    let packages = meta["packages"].as_array().unwrap();
    let members: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let xtask = packages.iter().find(|p| p["name"] == "xtask").unwrap();
    for dep in xtask["dependencies"].as_array().unwrap() {
        let name = dep["name"].as_str().unwrap();
        assert!(!members.contains(&name), "xtask depends on member {name}");
        assert!(!["tokio", "async-std", "smol"].contains(&name), "{name}");
        assert!(!name.contains("yaml"), "{name}");
    }
}

/// `.ci/run` only changes to the root, starts the tests' PostgreSQL (stopped however the run
/// ends) and hands over to `cargo xtask ci`, and the README gives that command.
#[test]
fn ci_entry_point_and_readme() {
    let path = repo_root().join(".ci/run");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert!(mode & 0o111 != 0, ".ci/run is not executable");
    let script = read(".ci/run");
    assert!(script.starts_with("#!/bin/sh\n"));
    let commands: Vec<&str> = script
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(commands.last(), Some(&"cargo xtask ci \"$@\""));
    assert!(
        commands.contains(&"trap pg_stop EXIT"),
        "PostgreSQL stops at the end"
    );
    assert!(
        commands.iter().any(|c| c.starts_with("cd ")),
        "changes to the root first"
    );

    let readme = read("README.md");
    let mut in_fence = false;
    let mut found = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if in_fence && line.contains("cargo xtask ci") {
            found = true;
        }
    }
    assert!(found, "README.md gives `cargo xtask ci` in a code block");
}

/// The repository passes its own gates and carries its corpus.
#[test]
fn the_repository_passes_its_own_gates() {
    for args in [&["deps"][..], &["docs", "check"]] {
        let out = run(&repo_root(), args, None);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert!(diagnostics(&out.stderr).is_empty(), "{}", out.stderr);
    }
}

/// The seam RFCs exist; a seam that is built is `implemented/`, one
/// still to build is `proposed/` (the issue that builds it moves it); no RFC is grandfathered.
#[test]
fn the_rfc_corpus_is_complete() {
    let rfc = repo_root().join("docs/rfc");
    for (slug, built) in [
        ("runtime-and-plugins", true),
        ("agent-lifecycle-and-ownership", true),
        ("session-persistence", true),
        ("shell-executor-ownership", true),
        ("acp-bridge-transport", true),
        ("model-seam", true),
        ("composition-root", true),
        ("typed-log-records", true),
    ] {
        let found: Vec<String> = ["implemented", "proposed"]
            .iter()
            .flat_map(|lifecycle| {
                let dir = rfc.join(lifecycle).join("architecture");
                std::fs::read_dir(dir).into_iter().flatten().map(move |e| {
                    format!("{lifecycle}/{}", e.unwrap().file_name().to_string_lossy())
                })
            })
            .filter(|name| name.ends_with(&format!("-{slug}.md")))
            .collect();
        assert_eq!(found.len(), 1, "{slug}: {found:?}");
        assert_eq!(
            found[0].starts_with("implemented/"),
            built,
            "{slug}: {found:?}"
        );
    }
    let mut stack = vec![rfc];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md")
                && path.parent() != Some(repo_root().join("docs/rfc").as_path())
            {
                // RFCs only: the README quotes the comment inside a fence to document it.
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(
                    !text.contains("<!-- rfc-format: alternatives-not-recorded"),
                    "{} is grandfathered",
                    path.display()
                );
            }
        }
    }
    let lifecycle = "docs/rfc/implemented/architecture/2026-11-30-agent-lifecycle-and-ownership";
    for suffix in [".md", ".zh.md", ".i18n.yaml"] {
        assert!(
            repo_root().join(format!("{lifecycle}{suffix}")).is_file(),
            "{suffix}"
        );
    }
    let pairs: toml::Table = toml::from_str(&read("xtask/pairs.toml")).unwrap();
    let required: Vec<&str> = pairs["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for path in [
        "README.md",
        "docs/architecture.md",
        &format!("{lifecycle}.md"),
    ] {
        assert!(required.contains(&path), "{path} is not required");
    }
    let budgets: toml::Table = toml::from_str(&read("xtask/budgets.toml")).unwrap();
    assert_eq!(
        budgets["ceilings"]["docs/architecture.md"].as_integer(),
        Some(2500)
    );
}

/// Line endings and generated files are declared.
#[test]
fn gitattributes_declares_line_endings_and_generated_files() {
    let attributes = read(".gitattributes");
    for line in [
        "*.md text eol=lf",
        "*.i18n.yaml text eol=lf",
        "docs/rfc/INDEX.md linguist-generated=true",
        "xtask/tests/fixtures/** -text",
    ] {
        assert!(attributes.lines().any(|l| l == line), "missing {line:?}");
    }
}

/// The roles table is the spec's, so reclassifying a crate is a visible change.
#[test]
fn the_roles_table_is_pinned() {
    let meta = metadata();
    let roles = &meta["metadata"]["dsh"]["roles"];
    let expected = [
        ("dsh-kernel", "definition", Some(0)),
        ("dsh-session", "definition", Some(1)),
        ("dsh-llm", "definition", Some(1)),
        ("dsh-shell", "definition", Some(1)),
        ("dsh-fs", "definition", Some(1)),
        ("dsh-mcp", "definition", Some(1)),
        ("dsh-hooks", "definition", Some(1)),
        ("dsh-tools", "definition", Some(2)),
        ("dsh-agent", "definition", Some(3)),
        ("dsh-view", "definition", Some(4)),
        ("dsh-session-jsonl", "provider", None),
        ("dsh-llm-openai", "provider", None),
        ("dsh-llm-replay", "provider", None),
        ("dsh-agent-loop", "provider", None),
        ("dsh-agent-context", "provider", None),
        ("dsh-shell-local", "provider", None),
        ("dsh-fs-local", "provider", None),
        ("dsh-mcp-rmcp", "provider", None),
        ("dsh-hooks-command", "provider", None),
        ("dsh-session-postgres", "provider", None),
        ("dsh-tool-bash", "consumer", None),
        ("dsh-tool-fs", "consumer", None),
        ("dsh-tool-todo", "consumer", None),
        ("dsh-tool-task", "consumer", None),
        ("dsh-tool-mcp", "consumer", None),
        ("dsh-acp", "consumer", None),
        ("dsh-tui", "consumer", None),
        ("dsh", "root", None),
        ("dsh-test-support", "support", None),
        ("dsh-test-providers", "support", None),
        ("xtask", "support", None),
    ];
    for (name, role, layer) in expected {
        assert_eq!(roles[name]["role"], role, "{name}");
        assert_eq!(roles[name]["layer"].as_i64(), layer, "{name}");
    }
    for package in meta["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if !expected.iter().any(|(n, _, _)| *n == name) {
            assert_eq!(
                roles[name]["role"], "support",
                "{name} is not a brief crate"
            );
        }
    }
}
