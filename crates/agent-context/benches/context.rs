//! Building one session's context for a repository 20 directories deep with 5 instruction
//! files on the way, the shape of a monorepo package. The context is built once per session,
//! before its first model request, so this is the latency a first prompt pays for it.
//!
//! `cargo bench -p dsh-agent-context --bench context`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_agent::{ContextBuilder, ContextRequest, ToolBrief};
use dsh_agent_context::{ContextConfig, LocalContext, Today};

fn repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut deep = dir.path().to_path_buf();
    for level in 0..20 {
        deep.push(format!("level{level}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    let mut at = dir.path().to_path_buf();
    for level in 0..20 {
        if level % 4 == 0 {
            std::fs::write(
                at.join("AGENTS.md"),
                "Run `make test`. Keep functions small.\n".repeat(40),
            )
            .unwrap();
        }
        at.push(format!("level{level}"));
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&[
        "-c",
        "user.email=b@e",
        "-c",
        "user.name=bench",
        "commit",
        "-qm",
        "init",
    ]);
    (dir, deep)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (_dir, deep) = repository();
    let tools = vec![ToolBrief {
        name: "bash".into(),
        guidance: Some("Use bash.".into()),
    }];
    let mut group = c.benchmark_group("context");
    for (name, git_status) in [
        ("with git status", true),
        ("files and environment only", false),
    ] {
        let config = ContextConfig {
            today: Today::Fixed("2026-12-04".into()),
            // A zero timeout never starts `git status`: what the build costs without it.
            git_timeout: if git_status {
                std::time::Duration::from_secs(1)
            } else {
                std::time::Duration::ZERO
            },
            ..ContextConfig::default()
        };
        let builder = LocalContext::new(config);
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut request = ContextRequest::new(&deep);
                request.model = "deepseek-chat".into();
                request.tools = tools.clone();
                let record = runtime.block_on(builder.build(request)).unwrap();
                assert_eq!(record.sources.len(), 6);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
