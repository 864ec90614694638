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
use dsh_e2e::{Sandbox, binary, percentiles};
use dsh_kernel::Runtime;
use dsh_session::SessionStorePlugin;
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use dsh_test_providers::providers::{
    AgentLoopPlugin, ApiKey, JsonlConfig, JsonlPlugin, LocalShellConfig, LoopConfig, OpenAiConfig,
    OpenAiPlugin, ShellLocalPlugin,
};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::ToolRegistryPlugin;

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

/// A long replay run: `steps` model calls that each run `seq 1 200`, then a final answer,
/// with compaction off (a replay script has no summaries to give), so the request grows with
/// every step and so does building it; the history itself is extended per step, and the
/// replay model keeps no requests. `DSH_SOAK_BIN` times another build of dsh (the
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
            .env("DSH_COMPACT_AT", "0")
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

/// Steps of the window soak.
const WINDOW_STEPS: usize = 1000;

/// One sample of the window soak, taken as a request arrives.
struct Sample {
    /// The tool step the request asks for (1 for the first request); a summary request
    /// carries the step it comes before.
    step: usize,
    summary: bool,
    /// dsh's own CPU so far (every thread's run time, from schedstat), in ns.
    cpu_ns: u64,
    rss_kib: u64,
}

/// The sum of the run times of `pid`'s threads, in ns.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A `/proc/<pid>/status` figure in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// A session that never ends by itself, against a loopback server: 1,000 steps, each a bash
/// call printing about 1 KiB (`seq 1 250`), in a 16,384-token window so that it compacts many
/// times. The server samples dsh's CPU and RSS as each request arrives, so a step's CPU is
/// everything dsh did between two requests: taking the answer, running the call's side,
/// building the next request, and any compaction before it. `DSH_SOAK_BIN` runs another
/// build (one from before compaction, say; it ignores the window and sends everything).
fn window_soak() {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

    let sandbox = Sandbox::new();
    let program =
        std::env::var_os("DSH_SOAK_BIN").map_or_else(|| binary().to_path_buf(), Into::into);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let pid = Arc::new(AtomicU32::new(0));
    let steps = Arc::new(AtomicUsize::new(0));
    let samples = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let summary_text = format!(
        "## Goal\nKeep going.\n\n## Progress\n{}",
        "Ran seq. ".repeat(200)
    );
    let (status, wall) = runtime.block_on(async {
        let server = {
            let (pid, steps, samples) = (pid.clone(), steps.clone(), samples.clone());
            MockModelServer::responding(move |request| {
                let body = request.json();
                let summary = body["tools"].as_array().is_none_or(Vec::is_empty);
                let step = match summary {
                    true => steps.load(Ordering::SeqCst) + 1,
                    false => steps.fetch_add(1, Ordering::SeqCst) + 1,
                };
                let pid = pid.load(Ordering::SeqCst);
                if pid != 0 {
                    samples.lock().unwrap().push(Sample {
                        step,
                        summary,
                        cpu_ns: cpu_ns(pid),
                        rss_kib: status_kib(pid, "VmRSS:"),
                    });
                }
                match (summary, step > WINDOW_STEPS) {
                    (true, _) => MockResponse::text(&summary_text),
                    (false, true) => MockResponse::text("done"),
                    (false, false) => MockResponse::tool_call(
                        "bash",
                        &serde_json::json!({"command": "seq 1 250"}),
                    ),
                }
            })
            .await
        };
        let base = server.base_url();
        let mut child = tokio::process::Command::new(&program)
            .args(["--base-url", base.as_str(), "--model", "m", "run"])
            .args(["--max-steps", &(WINDOW_STEPS + 1).to_string(), "go"])
            .current_dir(sandbox.work())
            .env("DSH_DATA_DIR", sandbox.data())
            .env("DSH_API_KEY_ENV", "")
            .env("DSH_CONTEXT_WINDOW", "16384")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        pid.store(child.id().unwrap_or(0), Ordering::SeqCst);
        let status = child.wait().await.unwrap();
        (status, started.elapsed())
    });
    let samples = samples.lock().unwrap();
    let tool: Vec<&Sample> = samples.iter().filter(|s| !s.summary).collect();
    // The CPU of steps `from..=to`: from the request of step `from` to that of `to + 1`.
    let per_step = |from: usize, to: usize| -> Option<f64> {
        let at = |step: usize| tool.iter().find(|s| s.step == step).map(|s| s.cpu_ns);
        let spent = at(to + 1)?.checked_sub(at(from)?)?;
        Some(spent as f64 / (to + 1 - from) as f64 / 1e6)
    };
    let shown = |ms: Option<f64>| ms.map_or("?".to_owned(), |ms| format!("{ms:.2} ms"));
    let compactions = samples.iter().filter(|s| s.summary).count();
    let first = samples.iter().find(|s| s.summary).map(|s| s.step);
    let rss_at = |step: usize| {
        tool.iter()
            .find(|s| s.step == step)
            .map_or("?".to_owned(), |s| format!("{} KiB", s.rss_kib))
    };
    let after_first = first.map_or("?".to_owned(), |step| rss_at(step + 1));
    let peak_after_first = tool
        .iter()
        .filter(|s| first.is_some_and(|f| s.step > f))
        .map(|s| s.rss_kib)
        .max()
        .unwrap_or(0);
    let (early, middle, late) = (per_step(1, 10), per_step(491, 500), per_step(991, 1000));
    let ratio = match (early, late) {
        (Some(early), Some(late)) => format!("{:.2}", late / early),
        _ => "?".to_owned(),
    };
    println!(
        "window soak, {WINDOW_STEPS} steps of `seq 1 250` in a 16384-token window ({}, {:.1} s wall, {compactions} compactions, the first before step {}):",
        if status.success() { "ok" } else { "FAILED" },
        wall.as_secs_f64(),
        first.map_or("?".to_owned(), |f| f.to_string()),
    );
    println!(
        "  dsh CPU per step: steps 1-10 {}, 491-500 {}, 991-1000 {} (991-1000 / 1-10 = {ratio}); steps 1-100 {}, 451-550 {}, 901-1000 {}",
        shown(early),
        shown(middle),
        shown(late),
        shown(per_step(1, 100)),
        shown(per_step(451, 550)),
        shown(per_step(901, 1000)),
    );
    println!(
        "  RSS: step 10 {}, after the first compaction {}, step 500 {}, step 1000 {}; highest after the first compaction {peak_after_first} KiB",
        rss_at(10),
        after_first,
        rss_at(500),
        rss_at(1000),
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported. `DSH_BENCH=soak`
    // runs the soaks alone.
    if std::env::var("DSH_BENCH").is_ok_and(|b| b == "soak") {
        soak();
        window_soak();
        return;
    }
    binary_budgets();
    overhead();
    soak();
    window_soak();
}
