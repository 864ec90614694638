//! `bash` tool latency. Target: the round trip of `{"command":"true"}` (argument parsing,
//! resolve, spawn, drain, reap, render) has a median ≤ 1.5× that of a raw `bash -c true`
//! spawn with piped output, 500 iterations after 50 warm-ups, measured in the same run.
//! Run with `cargo bench -p dsh-tool-bash --bench bash_tool`; figures go to stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use dsh_kernel::{CancellationToken, Runtime};
use dsh_test_providers::providers::{LocalShellConfig, ShellLocalPlugin};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::{ToolContext, ToolRegistry, ToolRegistryPlugin};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let rt = Runtime::new();
        rt.load(ToolRegistryPlugin).await.unwrap();
        rt.load(ShellLocalPlugin::new(LocalShellConfig::default()))
            .await
            .unwrap();
        rt.load(BashToolsPlugin::default()).await.unwrap();
        let bash = rt
            .scope()
            .require::<dyn ToolRegistry>()
            .unwrap()
            .get("bash")
            .unwrap();
        let shell = ["/usr/bin/bash", "/bin/bash"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap();
        let mut tool = Vec::new();
        let mut raw = Vec::new();
        for i in 0..550 {
            let started = Instant::now();
            let out = bash
                .call(
                    serde_json::json!({"command": "true"}),
                    ToolContext::new("b", CancellationToken::new()),
                )
                .await
                .unwrap();
            let tool_time = started.elapsed();
            assert!(out.content.ends_with("[exit code: 0]"));
            let started = Instant::now();
            let status = std::process::Command::new(shell)
                .args(["-c", "true"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .output()
                .unwrap();
            let raw_time = started.elapsed();
            assert!(status.status.success());
            if i >= 50 {
                tool.push(tool_time);
                raw.push(raw_time);
            }
        }
        let (tool, raw) = (median(tool), median(raw));
        eprintln!(
            "bash tool median {tool:?}, raw bash -c true median {raw:?}, ratio {:.2}",
            tool.as_secs_f64() / raw.as_secs_f64()
        );
        rt.shutdown().await;
    });
}
