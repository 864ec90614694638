//! Local executor benchmarks. Targets: a command producing 2 GiB is drained at ≥ 1 GB/s from
//! spawn to result, foreground and background, with peak resident growth ≤ 32 MiB and a spill
//! file stopped at its cap; 1,000 concurrent background `sleep 60` tasks start, list as
//! running and are killed without descriptor or thread errors, with threads ≤ workers + 16
//! and descriptors ≤ baseline + 3 per task; one second after a kill no descendant remains.
//! Run with `cargo bench -p dsh-shell-local --bench shell_local`; figures go to stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use dsh_shell::{ShellExecRequest, ShellExecutor, TaskState};
use dsh_shell_local::{LocalShellConfig, LocalShellExecutor};

fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

async fn drain(exec: &LocalShellExecutor, background: bool) {
    const BYTES: u64 = 2 << 30;
    let rss_before = status_field("VmRSS:");
    let request = ShellExecRequest::new("head -c 2147483648 /dev/zero").background(background);
    let spec = exec.resolve(request).unwrap();
    let started = Instant::now();
    let exit = if background {
        let id = exec.start(spec).await.unwrap();
        let exit = exec.wait(id).await.unwrap();
        exec.release(id).await.unwrap();
        exit
    } else {
        let out = exec.run(spec).await.unwrap();
        exec.release(out.task_id).await.unwrap();
        out.exit
    };
    let elapsed = started.elapsed();
    assert_eq!(exit.output.total_bytes, BYTES);
    let peak = status_field("VmHWM:");
    eprintln!(
        "drain {}: {:.2} GB/s, peak RSS growth {} KiB (high-water {} KiB), spill {:?}",
        if background {
            "background"
        } else {
            "foreground"
        },
        BYTES as f64 / elapsed.as_secs_f64() / 1e9,
        peak.saturating_sub(rss_before),
        peak,
        exit.output.spill
    );
}

async fn concurrency(exec: &LocalShellExecutor) {
    let fds_before = open_fds();
    let threads_before = status_field("Threads:");
    let mut ids = Vec::new();
    let started = Instant::now();
    for _ in 0..1000 {
        let spec = exec
            .resolve(ShellExecRequest::new("sleep 60").background(true))
            .unwrap();
        ids.push(exec.start(spec).await.unwrap());
    }
    let spawn_time = started.elapsed();
    let running = exec
        .list()
        .iter()
        .filter(|t| matches!(t.state, TaskState::Running))
        .count();
    let fds = open_fds();
    let threads = status_field("Threads:");

    let killed = Instant::now();
    for id in &ids {
        exec.kill(*id).await.unwrap();
    }
    for id in &ids {
        // Beyond the finished-task limit the earliest finished were evicted already.
        let _ = exec.release(*id).await;
    }
    eprintln!(
        "1000 background tasks: started in {:?}, {running} running, descriptors +{} ({:.2}/task), threads {threads_before} -> {threads}, all killed and released in {:?}",
        spawn_time,
        fds - fds_before,
        (fds - fds_before) as f64 / 1000.0,
        killed.elapsed()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let exec = LocalShellExecutor::new(LocalShellConfig {
            term_grace: Duration::from_millis(200),
            ..LocalShellConfig::default()
        })
        .unwrap();
        drain(&exec, false).await;
        drain(&exec, true).await;
        concurrency(&exec).await;
        exec.dispose().await;
    });
}
