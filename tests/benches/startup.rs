//! What a session costs before its first prompt, A/B: this build's `dsh acp` against another
//! binary (`DSH_BASELINE=/path/to/dsh`, e.g. an older commit's release build), both in one
//! run, alternating, against the same OpenAI-compatible mock server on 127.0.0.1 (its model
//! list served, as a real server's is). Without `DSH_BASELINE` only this build is measured.
//!
//! Figures, p50 over the runs: spawn → `initialize` answered (each process after the first,
//! so the binary is in the page cache), the first `session/new` of a process (an editor's
//! first thread) and the later ones, `session/load` of a stored session in a new process,
//! stdin closed → exit, and after 20 prompts the RSS of the process tree (dsh and what it
//! started, the watchdog) and dsh's own PSS.
//!
//! Run with `DSH_BASELINE=… cargo bench -p dsh-e2e --bench startup`; figures go to stdout.
//! With `DSH_BENCH_SESSIONS_URL` set, the sessions are kept in that PostgreSQL database.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    next: i64,
}

impl Acp {
    fn start(binary: &Path, data: &Path, work: &Path, base: &str) -> (Acp, Instant) {
        let started = Instant::now();
        let mut child = Command::new(binary)
            .args(["--data-dir"])
            .arg(data)
            .args(["--base-url", base, "--model", "mock-model", "acp"])
            .args(["--permission", "allow"])
            .current_dir(work)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", work)
            .env("DSH_API_KEY_ENV", "")
            .env("DSH_LOG", "error")
            .envs(
                std::env::var("DSH_BENCH_SESSIONS_URL")
                    .map(|url| ("DSH_SESSIONS_URL", url))
                    .ok(),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        (
            Acp {
                child,
                stdin,
                lines,
                next: 1,
            },
            started,
        )
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
        loop {
            let frame = self.lines.recv_timeout(Duration::from_secs(60)).unwrap();
            if frame.get("method").is_none() && frame["id"] == id {
                return frame;
            }
        }
    }

    fn initialize(&mut self) {
        self.request("initialize", json!({"protocolVersion": 1}));
    }

    fn new_session(&mut self, cwd: &Path) -> String {
        let answer = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        answer["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    /// Closes stdin; the time until the process exited.
    fn finish(mut self) -> Duration {
        let started = Instant::now();
        drop(self.stdin.take());
        self.child.wait().unwrap();
        started.elapsed()
    }
}

/// `pid` and its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let children = std::fs::read_dir(format!("/proc/{}/task", all[i]))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|text| {
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok())
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>();
        all.extend(children);
        i += 1;
    }
    all
}

/// A `key:` line of `/proc/<pid>/<file>`, in KiB.
fn kib(pid: u32, file: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

#[derive(Default)]
struct Figures {
    initialize: Vec<Duration>,
    first_new: Vec<Duration>,
    new: Vec<Duration>,
    load: Vec<Duration>,
    exit: Vec<Duration>,
    tree_rss: Vec<u64>,
    pss: Vec<u64>,
    processes: usize,
}

/// One round for `binary`: every figure once (session/new ten times).
fn round(binary: &Path, base: &str, figures: &mut Figures) {
    let dir = tempfile::tempdir().unwrap();
    let (data, work) = (dir.path().join("data"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    // The first process warms the cache; the figure is the second's.
    let (mut warm, _) = Acp::start(binary, &data, &work, base);
    warm.initialize();
    warm.finish();
    let (mut acp, started) = Acp::start(binary, &data, &work, base);
    acp.initialize();
    figures.initialize.push(started.elapsed());
    let mut session = String::new();
    for n in 0..10 {
        let started = Instant::now();
        session = acp.new_session(&work);
        match n {
            0 => figures.first_new.push(started.elapsed()),
            _ => figures.new.push(started.elapsed()),
        }
    }
    for _ in 0..20 {
        let answer = acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
        );
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    }
    let pids = tree(acp.child.id());
    figures.processes = pids.len();
    figures
        .tree_rss
        .push(pids.iter().map(|p| kib(*p, "status", "VmRSS:")).sum());
    figures
        .pss
        .push(kib(acp.child.id(), "smaps_rollup", "Pss:"));
    figures.exit.push(acp.finish());
    let (mut again, _) = Acp::start(binary, &data, &work, base);
    again.initialize();
    let started = Instant::now();
    let loaded = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": work, "mcpServers": []}),
    );
    figures.load.push(started.elapsed());
    assert!(loaded.get("error").is_none(), "{loaded}");
    again.finish();
}

fn report(name: &str, figures: &Figures) {
    let rss = {
        let mut v = figures.tree_rss.clone();
        v.sort();
        v[v.len() / 2]
    };
    let pss = {
        let mut v = figures.pss.clone();
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "{name}: spawn → initialize {:?} · first session/new {:?}, later ones {:?} · session/load (new process) {:?} · stdin EOF → exit {:?} · after 20 prompts: tree RSS {:.1} MiB ({} processes), dsh PSS {:.1} MiB",
        p50(figures.initialize.clone()),
        p50(figures.first_new.clone()),
        p50(figures.new.clone()),
        p50(figures.load.clone()),
        p50(figures.exit.clone()),
        rss as f64 / 1024.0,
        figures.processes,
        pss as f64 / 1024.0
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockModelServer::responding(|_| MockResponse::text("ok")));
    server.serve_models(&["mock-model", "mock-large"]);
    let base = server.base_url();
    let current = dsh_e2e::binary().to_path_buf();
    let mut binaries: Vec<(String, PathBuf)> = vec![("this build".into(), current)];
    if let Some(baseline) = std::env::var_os("DSH_BASELINE") {
        binaries.push(("baseline".into(), PathBuf::from(baseline)));
    }
    let rounds: usize = std::env::var("DSH_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let mut figures: Vec<Figures> = binaries.iter().map(|_| Figures::default()).collect();
    // Alternating, so a busy moment of the machine costs both alike.
    for _ in 0..rounds {
        for ((_, binary), figures) in binaries.iter().zip(figures.iter_mut()) {
            round(binary, &base, figures);
        }
    }
    for ((name, binary), figures) in binaries.iter().zip(&figures) {
        report(&format!("{name} ({})", binary.display()), figures);
    }
    drop(server);
}
