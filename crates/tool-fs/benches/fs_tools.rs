//! The file tools' speed: `read` and `edit` of a 100 KiB file through the tool, and `grep`
//! (a literal and a regex) and `glob` over a large real tree against the `rg` binary in the
//! same run. The tree is `DSH_BENCH_TREE`, else the cargo registry's sources.
//! Run with `cargo bench -p dsh-tool-fs --bench fs_tools`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_fs::FileAccess;
use dsh_kernel::{CancellationToken, Runtime};
use dsh_session::SessionId;
use dsh_test_providers::providers::FsLocalPlugin;
use dsh_tool_fs::FsToolsPlugin;
use dsh_tools::{ToolContext, ToolRegistry, ToolRegistryPlugin};
use serde_json::{Value, json};

struct Rig {
    runtime: Runtime,
    cx: ToolContext,
}

impl Rig {
    async fn new(cwd: &Path) -> Rig {
        let runtime = Runtime::new();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        runtime.load(FsLocalPlugin::default()).await.unwrap();
        runtime.load(FsToolsPlugin::default()).await.unwrap();
        let files = runtime.scope().require::<dyn FileAccess>().unwrap();
        let cx = ToolContext::for_caller(
            SessionId::mint(),
            runtime.scope().child("agent").unwrap(),
            Some(cwd.to_path_buf()),
            CancellationToken::new(),
        )
        .with_files(files);
        Rig { runtime, cx }
    }

    async fn call(&self, tool: &str, args: Value) -> Duration {
        let tools = self.runtime.scope().require::<dyn ToolRegistry>().unwrap();
        let tool = tools.get(tool).unwrap();
        let started = Instant::now();
        let out = tool.call(args, self.cx.clone()).await;
        let took = started.elapsed();
        out.unwrap_or_else(|e| panic!("{e}"));
        took
    }
}

fn p50(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn rg(args: &[&str]) -> Option<Duration> {
    let started = Instant::now();
    let status = Command::new("rg")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    // rg exits 1 when nothing matched; both are a finished search.
    (status.code().is_some_and(|c| c <= 1)).then(|| started.elapsed())
}

fn tree() -> PathBuf {
    if let Ok(tree) = std::env::var("DSH_BENCH_TREE") {
        return PathBuf::from(tree);
    }
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo")
        });
    home.join("registry/src")
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (0..2000)
        .map(|i| format!("line {i:05} of a one-hundred kibibyte file, padded out\n"))
        .collect();
    assert!(text.len() >= 100 * 1024, "{}", text.len());
    std::fs::write(dir.path().join("big.txt"), &text).unwrap();
    let rig = Rig::new(dir.path()).await;
    let mut reads = Vec::new();
    let mut edits = Vec::new();
    for i in 0..200 {
        reads.push(rig.call("read", json!({"path": "big.txt"})).await);
        let (from, to) = if i % 2 == 0 {
            ("01000 of", "01000 in")
        } else {
            ("01000 in", "01000 of")
        };
        edits.push(
            rig.call(
                "edit",
                json!({"path": "big.txt", "old_string": from, "new_string": to}),
            )
            .await,
        );
    }
    println!(
        "read of a {} KiB file: p50 {:?}; edit: p50 {:?} (200 each)",
        text.len() / 1024,
        p50(reads),
        p50(edits)
    );
    // The provider alone, to tell the tool's own cost from the disk's.
    let files = rig.cx.files().unwrap().clone();
    let path = dir.path().join("big.txt");
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = Instant::now();
        let file = files.read(&path).await.unwrap();
        reads.push(started.elapsed());
        let started = Instant::now();
        files
            .write(&path, &file.text, Some(&file.version))
            .await
            .unwrap();
        writes.push(started.elapsed());
    }
    println!(
        "  the local provider alone: read p50 {:?}; atomic write (temp file, fsync, rename, directory fsync) p50 {:?}",
        p50(reads),
        p50(writes)
    );

    let tree = tree();
    if !tree.is_dir() {
        println!("no tree at {}; set DSH_BENCH_TREE", tree.display());
        return;
    }
    let root = tree.display().to_string();
    let files = ignore::WalkBuilder::new(&tree)
        .build()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_type().is_some_and(|t| t.is_file()))
        })
        .count();
    println!("tree: {root} ({files} files)");
    let big = Rig::new(&tree).await;
    let runs = 5;
    for (what, pattern) in [("literal", "unsafe fn"), ("regex", r"fn \w+_mut\(")] {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..runs {
            ours.push(big.call("grep", json!({"pattern": pattern})).await);
            if let Some(t) = rg(&["-n", "--no-heading", pattern, &root]) {
                theirs.push(t);
            }
        }
        let (ours, theirs) = (p50(ours), theirs);
        match theirs.is_empty() {
            true => println!("grep {what} {pattern:?}: p50 {ours:?} (rg not installed)"),
            false => {
                let theirs = p50(theirs);
                println!(
                    "grep {what} {pattern:?}: p50 {ours:?}, rg {theirs:?}: {:.2}x rg",
                    ours.as_secs_f64() / theirs.as_secs_f64()
                );
            }
        }
    }
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..runs {
        ours.push(big.call("glob", json!({"pattern": "**/*.rs"})).await);
        if let Some(t) = rg(&["--files", "-g", "*.rs", &root]) {
            theirs.push(t);
        }
    }
    let ours = p50(ours);
    match theirs.is_empty() {
        true => println!("glob **/*.rs: p50 {ours:?} (rg not installed)"),
        false => {
            let theirs = p50(theirs);
            println!(
                "glob **/*.rs: p50 {ours:?}, rg --files -g '*.rs' {theirs:?}: {:.2}x rg",
                ours.as_secs_f64() / theirs.as_secs_f64()
            );
        }
    }
}
