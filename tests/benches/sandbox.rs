//! What the sandbox costs a command: `bash -c true` through the local executor, unconfined
//! and in a `workspace-write` sandbox (the release dsh binary as the helper), alternating,
//! p50 and p99 of each.
//!
//! Run with `cargo bench -p dsh-e2e --bench sandbox`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::time::{Duration, Instant};

use dsh_e2e::percentiles;
use dsh_shell::{SandboxPolicy, ShellExecRequest, ShellExecutor};
use dsh_shell_local::{LocalShellConfig, LocalShellExecutor};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let exec = LocalShellExecutor::new(LocalShellConfig {
            sandbox_helper: Some(dsh_e2e::binary().to_path_buf()),
            ..LocalShellConfig::default()
        })
        .unwrap();
        let project = tempfile::tempdir().unwrap();
        let sandboxed = SandboxPolicy::WorkspaceWrite {
            writable: vec![project.path().to_path_buf()],
            network: false,
        };
        println!("sandbox: {:?}", exec.sandbox_status());
        let mut free = Vec::new();
        let mut confined = Vec::new();
        for i in 0..402 {
            let policy = match i % 2 {
                0 => SandboxPolicy::FullAccess,
                _ => sandboxed.clone(),
            };
            let spec = exec
                .resolve(
                    ShellExecRequest::new("true")
                        .workdir(project.path())
                        .sandbox(policy),
                )
                .unwrap();
            let started = Instant::now();
            let out = exec.run(spec).await.unwrap();
            let took: Duration = started.elapsed();
            assert_eq!(out.exit.code, Some(0));
            // The first of each warms the page cache and the probe.
            if i >= 2 {
                match i % 2 {
                    0 => free.push(took),
                    _ => confined.push(took),
                }
            }
        }
        println!("bash -c true, unconfined: {}", percentiles(free));
        println!("bash -c true, workspace-write: {}", percentiles(confined));
        exec.dispose().await;
    });
}
