//! What the sandbox costs a command: `bash -c true` through the local executor, unconfined,
//! in a `workspace-write` sandbox (the release dsh binary as the helper), and in one of a git
//! repository (whose `.git` is guarded too), in turn, p50 and p99 of each.
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
        // A plain directory, and a git repository (whose `.git` the helper guards).
        let plain = tempfile::tempdir().unwrap();
        let repository = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repository.path().join(".git/hooks")).unwrap();
        std::fs::write(repository.path().join(".git/config"), "").unwrap();
        println!("sandbox: {:?}", exec.sandbox_status());
        let cases = [
            ("unconfined", plain.path(), false),
            ("workspace-write", plain.path(), true),
            (
                "workspace-write in a git repository",
                repository.path(),
                true,
            ),
        ];
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
        for i in 0..603 {
            let (_, dir, confined) = cases[i % cases.len()];
            let policy = match confined {
                false => SandboxPolicy::FullAccess,
                true => SandboxPolicy::WorkspaceWrite {
                    writable: vec![dir.to_path_buf()],
                    network: false,
                },
            };
            let spec = exec
                .resolve(ShellExecRequest::new("true").workdir(dir).sandbox(policy))
                .unwrap();
            let started = Instant::now();
            let out = exec.run(spec).await.unwrap();
            let took: Duration = started.elapsed();
            assert_eq!(out.exit.code, Some(0));
            // The first of each warms the page cache and the probe.
            if i >= cases.len() {
                samples[i % cases.len()].push(took);
            }
        }
        for ((name, _, _), taken) in cases.iter().zip(samples) {
            println!("bash -c true, {name}: {}", percentiles(taken));
        }
        exec.dispose().await;
    });
}
