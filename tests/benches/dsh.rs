//! The binary's budgets: `dsh --version` cold start, a 3-step `dsh run --replay` end to end
//! against `bash -c true` in the same run with its peak RSS, and the harness overhead from
//! `Agent::send` to the model request's first byte at a loopback server in the full
//! composition. Run with `cargo bench -p dsh-e2e --bench dsh`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_agent::{AgentRegistry, CreateAgent, UserMessage};
use dsh_e2e::{Sandbox, binary};
use dsh_kernel::Runtime;
use dsh_session::SessionStorePlugin;
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use dsh_test_providers::providers::{
    AgentLoopPlugin, ApiKey, JsonlConfig, JsonlPlugin, LocalShellConfig, LoopConfig, OpenAiConfig,
    OpenAiPlugin, ShellLocalPlugin,
};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::ToolRegistryPlugin;

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    format!(
        "p50 {:?}, p99 {:?} ({} runs)",
        at(0.5),
        at(0.99),
        samples.len()
    )
}

fn time(mut command: impl FnMut() -> Command, runs: usize) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let mut command = command();
            command.stdout(Stdio::null()).stderr(Stdio::null());
            let started = Instant::now();
            let status = command.status().unwrap();
            let took = started.elapsed();
            assert!(status.success());
            took
        })
        .collect()
}

fn three_steps(sandbox: &Sandbox) -> String {
    let path = sandbox.root.path().join("three.json");
    let call = |cmd: &str| serde_json::json!({"stream": [{"tool_call": {"name": "bash", "arguments": {"command": cmd}}}]});
    let script = serde_json::json!({
        "version": 1, "name": "three",
        "entries": [call("true"), call("echo two"), {"stream": [{"text": "done"}], "finish": "stop"}]
    });
    std::fs::write(&path, script.to_string()).unwrap();
    path.display().to_string()
}

fn binary_budgets() {
    let sandbox = Sandbox::new();
    let version = time(|| sandbox.dsh(["--version"]), 200);
    println!("dsh --version cold start: {}", percentiles(version));
    let script = three_steps(&sandbox);
    let run = time(|| sandbox.dsh(["run", "--replay", &script, "go"]), 50);
    let bash = time(
        || {
            let mut c = Command::new("bash");
            c.args(["-c", "true"]);
            c
        },
        50,
    );
    println!("dsh run --replay, 3 steps, no delays: {}", percentiles(run));
    println!("bash -c true, same run: {}", percentiles(bash));
    let rss = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(binary())
        .args(["run", "--replay", &script, "go"])
        .current_dir(sandbox.work())
        .env("DSH_DATA_DIR", sandbox.data())
        .stdout(Stdio::null())
        .output();
    match rss {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            let kib = text.lines().last().unwrap_or("?");
            println!("dsh run --replay, 3 steps: peak RSS {kib} KiB");
        }
        Err(e) => println!("peak RSS: /usr/bin/time unavailable ({e})"),
    }
}

fn overhead() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (warm, measured) = (10usize, 200usize);
        let responses = (0..warm + measured)
            .map(|_| MockResponse::sse_fixture("text_basic"))
            .collect();
        let server = MockModelServer::start(responses).await;
        let dir = tempfile::tempdir().unwrap();
        let runtime = Arc::new(Runtime::new());
        let mut config = OpenAiConfig::deepseek(Some(ApiKey::new("k")));
        config.base_url = server.base_url();
        runtime
            .load(JsonlPlugin {
                config: JsonlConfig::new(dir.path()),
            })
            .await
            .unwrap();
        runtime.load(SessionStorePlugin).await.unwrap();
        runtime
            .load(OpenAiPlugin::new(config).unwrap())
            .await
            .unwrap();
        runtime
            .load(ShellLocalPlugin::new(LocalShellConfig::default()))
            .await
            .unwrap();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        runtime.load(BashToolsPlugin::default()).await.unwrap();
        runtime
            .load(AgentLoopPlugin::new(LoopConfig::default()))
            .await
            .unwrap();
        let registry = runtime.scope().require::<dyn AgentRegistry>().unwrap();
        let handle = registry
            .create(CreateAgent::new(runtime.scope().clone()).with_cwd("/tmp"))
            .await
            .unwrap();
        let mut gaps = Vec::new();
        for i in 0..warm + measured {
            let sent = Instant::now();
            let ticket = handle
                .agent()
                .send(UserMessage::user(format!("prompt {i}")))
                .unwrap();
            server.wait_arrival(i).await;
            let arrived = server.requests()[i].at;
            if i >= warm {
                gaps.push(arrived.saturating_duration_since(sent));
            }
            ticket.outcome().await;
        }
        println!(
            "harness overhead, Agent::send to the request at the server (full composition): {}",
            percentiles(gaps)
        );
        println!("connections used: {}", server.connections());
        handle.dispose().await;
        runtime.shutdown().await;
    });
}

/// A long replay run: `steps` model calls that each run `seq 1 200`, then a final answer. Its
/// wall time and peak RSS should grow linearly with the steps (the history is extended per
/// step, the replay model keeps no requests). `DSH_SOAK_BIN` times another build of dsh (the
/// one before a change, say) with the same scripts.
fn soak() {
    let sandbox = Sandbox::new();
    let program =
        std::env::var_os("DSH_SOAK_BIN").map_or_else(|| binary().to_path_buf(), Into::into);
    for steps in [100usize, 400, 1600] {
        let call = serde_json::json!({"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "seq 1 200"}}}]});
        let mut entries = vec![call; steps];
        entries.push(serde_json::json!({"stream": [{"text": "done"}], "finish": "stop"}));
        let path = sandbox.root.path().join(format!("soak-{steps}.json"));
        let script = serde_json::json!({"version": 1, "name": "soak", "entries": entries});
        std::fs::write(&path, script.to_string()).unwrap();
        let out = Command::new("/usr/bin/time")
            .args(["-f", "%e %U %M"])
            .arg(&program)
            .args(["run", "--max-steps", &(steps + 1).to_string(), "--replay"])
            .arg(&path)
            .arg("go")
            .current_dir(sandbox.work())
            .env("DSH_DATA_DIR", sandbox.data())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        let figures = text.lines().last().unwrap_or("? ? ?");
        let mut parts = figures.split_whitespace();
        let (wall, user, kib) = (
            parts.next().unwrap_or("?"),
            parts.next().unwrap_or("?"),
            parts.next().unwrap_or("?"),
        );
        println!(
            "soak, {steps} steps of `seq 1 200`: {wall} s wall, {user} s user, peak RSS {kib} KiB ({})",
            if out.status.success() { "ok" } else { "FAILED" }
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported. `DSH_BENCH=soak`
    // runs the soak alone.
    if std::env::var("DSH_BENCH").is_ok_and(|b| b == "soak") {
        soak();
        return;
    }
    binary_budgets();
    overhead();
    soak();
}
