//! `dsh acp` budgets, measured on the built binary with the replay model (no delays):
//! start → `initialize` answered, `session/new`, prompt → first update, cancel →
//! `cancelled` (for a stream that stops and for one that ignores cancellation), idle RSS per
//! session, 100 sessions streaming 1,000 chunks each at once, and a prompt with one bash
//! call in the sandbox and without it.
//! Run with `cargo bench -p dsh --bench acp` (`DSH_BENCH=history` or `=tools` for those
//! figures alone); figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    next: i64,
    _dir: tempfile::TempDir,
}

impl Agent {
    fn start(entries: Value) -> (Agent, Instant) {
        Agent::start_with(entries, &[])
    }

    /// With `global` flags before the command (`--sandbox full-access`).
    fn start_with(entries: Value, global: &[&str]) -> (Agent, Instant) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(
            &script,
            json!({"version": 1, "name": "bench", "entries": entries}).to_string(),
        )
        .unwrap();
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
            .args(["--data-dir"])
            .arg(dir.path().join("data"))
            .arg("--replay")
            .arg(&script)
            .args(global)
            .args(["acp", "--permission", "allow"])
            .current_dir(dir.path())
            .env("DSH_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        let agent = Agent {
            child,
            stdin,
            lines,
            next: 1,
            _dir: dir,
        };
        (agent, started)
    }

    fn send(&mut self, frame: Value) {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn until(&self, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let frame = self.lines.recv_timeout(Duration::from_secs(60)).unwrap();
            if pred(&frame) {
                return frame;
            }
        }
    }

    fn response(&self, id: i64) -> Value {
        self.until(|f| f.get("method").is_none() && f["id"] == id)
    }

    fn session(&mut self) -> String {
        let cwd = self._dir.path().to_path_buf();
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        self.response(id)["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn initialize(&mut self) {
        let id = self.request("initialize", json!({"protocolVersion": 1}));
        self.response(id);
    }

    fn status(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    fn close(self) {
        drop(self.close_keeping());
    }

    /// Ends dsh and hands back its directory, which outlives it.
    fn close_keeping(mut self) -> tempfile::TempDir {
        drop(self.stdin);
        let _ = self.child.wait();
        self._dir
    }
}

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

fn prompt(session: &str, text: &str) -> Value {
    json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
}

fn main() {
    // `DSH_BENCH=history` runs only the history figures (list, resume, options), `=tools`
    // only the tool prompt's.
    let only = std::env::var("DSH_BENCH").ok();
    if only.as_deref() == Some("tools") {
        tool_prompt();
        return;
    }
    if only.as_deref() != Some("history") {
        basics();
        tool_prompt();
    }
    list_many();
    resume_long();
    option_round_trip();
}

/// A prompt whose model runs `bash -c true` once and answers: prompt → end of turn, with
/// commands in the default sandbox and with `--sandbox full-access`.
fn tool_prompt() {
    let runs = 100;
    let entries: Vec<Value> = (0..runs)
        .flat_map(|_| {
            [
                json!({"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "true"}}}]}),
                json!({"stream": [{"text": "done"}], "finish": "stop"}),
            ]
        })
        .collect();
    for (name, global) in [
        ("sandboxed", &[][..]),
        ("full access", &["--sandbox", "full-access"][..]),
    ] {
        let (mut agent, _) = Agent::start_with(json!(entries), global);
        agent.initialize();
        let session = agent.session();
        let turns: Vec<Duration> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                let id = agent.request("session/prompt", prompt(&session, "go"));
                let answer = agent.response(id);
                assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
                started.elapsed()
            })
            .collect();
        println!("tool prompt (bash true, {name}): {}", percentiles(turns));
        agent.close();
    }
}

/// Start, `session/new`, first update, idle RSS, cancels and 100 concurrent sessions.
fn basics() {
    let text = json!([{"stream": [{"text": "x"}], "finish": "stop"}]);

    let starts: Vec<Duration> = (0..30)
        .map(|_| {
            let (mut agent, started) = Agent::start(text.clone());
            agent.initialize();
            let took = started.elapsed();
            agent.close();
            took
        })
        .collect();
    println!("start → initialize answered: {}", percentiles(starts));

    let (mut agent, _) = Agent::start(text.clone());
    agent.initialize();
    let news: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            agent.session();
            started.elapsed()
        })
        .collect();
    println!("session/new: {}", percentiles(news));
    agent.close();

    let runs = 200;
    let entries: Vec<Value> = (0..runs)
        .map(|_| json!({"stream": [{"text": "x"}], "finish": "stop"}))
        .collect();
    let (mut agent, _) = Agent::start(json!(entries));
    agent.initialize();
    let session = agent.session();
    let firsts: Vec<Duration> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let id = agent.request("session/prompt", prompt(&session, "go"));
            agent.until(|f| f["method"] == "session/update");
            let took = started.elapsed();
            agent.response(id);
            took
        })
        .collect();
    println!("prompt → first update: {}", percentiles(firsts));
    let one = agent.status("VmRSS:");
    let more = 50;
    for _ in 0..more {
        agent.session();
    }
    let many = agent.status("VmRSS:");
    println!(
        "idle RSS: {one} KiB with one session; +{:.0} KiB per further idle session ({more} added)",
        (many.saturating_sub(one)) as f64 / more as f64
    );
    agent.close();

    for (name, entry) in [
        (
            "cancel → cancelled",
            json!({"stream": [{"text": "x"}], "hang": true}),
        ),
        (
            "cancel → cancelled, stream ignoring cancellation",
            json!({"stream": [{"text": "x"}], "hang_ignoring_abort": true}),
        ),
    ] {
        let runs = 50;
        let (mut agent, _) = Agent::start(json!(vec![entry; runs]));
        agent.initialize();
        let session = agent.session();
        let cancels: Vec<Duration> = (0..runs)
            .map(|_| {
                let id = agent.request("session/prompt", prompt(&session, "go"));
                agent.until(|f| f["method"] == "session/update");
                let started = Instant::now();
                agent.send(json!({"jsonrpc": "2.0", "method": "session/cancel",
                    "params": {"sessionId": session}}));
                let response = agent.response(id);
                assert_eq!(response["result"]["stopReason"], "cancelled");
                started.elapsed()
            })
            .collect();
        println!("{name}: {}", percentiles(cancels));
        agent.close();
    }

    let sessions = 100;
    let entries: Vec<Value> = (0..sessions)
        .map(|_| json!({"stream": [{"text": "x", "repeat": 1000}], "finish": "stop"}))
        .collect();
    let (mut agent, _) = Agent::start(json!(entries));
    agent.initialize();
    let ids: Vec<String> = (0..sessions).map(|_| agent.session()).collect();
    let started = Instant::now();
    let prompts: Vec<i64> = ids
        .iter()
        .map(|s| agent.request("session/prompt", prompt(s, "go")))
        .collect();
    let mut open: std::collections::HashSet<i64> = prompts.into_iter().collect();
    let mut chunks = 0u64;
    while !open.is_empty() {
        let frame = agent.lines.recv_timeout(Duration::from_secs(60)).unwrap();
        if frame["method"] == "session/update" {
            chunks += 1;
        } else if let Some(id) = frame["id"].as_i64()
            && frame.get("method").is_none()
        {
            assert_eq!(frame["result"]["stopReason"], "end_turn");
            open.remove(&id);
        }
    }
    println!(
        "{sessions} sessions × 1,000 chunks at once: {:?} wall, {chunks} updates, peak RSS {} KiB",
        started.elapsed(),
        agent.status("VmHWM:")
    );
    agent.close();
}

/// A directory whose dsh stored one prompted session, which outlives that dsh, and the
/// session's log.
fn one_stored_session() -> (tempfile::TempDir, std::path::PathBuf) {
    let (mut agent, _) = Agent::start(json!([{"stream": [{"text": "x"}], "finish": "stop"}]));
    agent.initialize();
    let session = agent.session();
    let id = agent.request("session/prompt", prompt(&session, "hi"));
    agent.response(id);
    let kept = agent.close_keeping();
    let log = std::fs::read_dir(kept.path().join("data/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join(format!("{session}.jsonl"));
    (kept, log)
}

/// `session/list` over 10,000 stored sessions: one session stored by a prompt, copied under
/// fresh ids, then the first page and the whole list a page at a time, in a new process.
fn list_many() {
    let (kept, log) = one_stored_session();
    let dir = kept.path().to_path_buf();
    let project = log.parent().unwrap().to_path_buf();
    let text = std::fs::read_to_string(&log).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    for i in 0..9_999u64 {
        let id = format!("01a24000-0000-7000-8000-{i:012}");
        header["id"] = json!(id);
        std::fs::write(
            project.join(format!("{id}.jsonl")),
            format!("{header}\n{rest}"),
        )
        .unwrap();
    }
    let mut server = Stored::start(&dir);
    server.call(1, "initialize", json!({"protocolVersion": 1}));
    let firsts: Vec<Duration> = (0..30)
        .map(|i| {
            let started = Instant::now();
            let page = server.call(10 + i, "session/list", json!({"cwd": dir}));
            assert_eq!(page["result"]["sessions"].as_array().unwrap().len(), 50);
            started.elapsed()
        })
        .collect();
    println!(
        "session/list of 10,000 stored sessions, first page: {}",
        percentiles(firsts)
    );
    let started = Instant::now();
    let (mut cursor, mut listed, mut next) = (Value::Null, 0, 100);
    loop {
        let page = server.call(next, "session/list", json!({"cwd": dir, "cursor": cursor}));
        next += 1;
        listed += page["result"]["sessions"].as_array().unwrap().len();
        cursor = page["result"]["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    println!(
        "session/list of 10,000 stored sessions, every page ({listed} sessions): {:?}",
        started.elapsed()
    );
    server.finish();
    drop(kept);
}

/// `session/resume` of a session whose log holds 100,000 events (one stored turn repeated),
/// in a new process, each resume followed by `session/close`.
fn resume_long() {
    let (kept, log) = one_stored_session();
    let dir = kept.path().to_path_buf();
    let session = log.file_stem().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap().to_owned();
    let events: Vec<Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    let start = events
        .iter()
        .position(|e| e["type"] == "turn/start")
        .unwrap();
    let (before, turn) = events.split_at(start);
    let mut out = vec![header];
    let mut seq = 0u64;
    let mut push = |mut event: Value, turn_number: Option<u64>| {
        event["seq"] = json!(seq);
        seq += 1;
        if let Some(n) = turn_number
            && event["data"].get("turn").is_some()
        {
            event["data"]["turn"] = json!(n);
        }
        out.push(event.to_string());
    };
    for event in before {
        push(event.clone(), None);
    }
    let per_turn = turn.iter().filter(|e| e["type"] != "session/title").count();
    let turns = (100_000 - before.len()) / per_turn;
    for number in 1..=turns as u64 {
        for event in turn {
            if event["type"] != "session/title" {
                push(event.clone(), Some(number));
            }
        }
    }
    let total = out.len() - 1;
    std::fs::write(&log, out.join("\n") + "\n").unwrap();
    let mut server = Stored::start(&dir);
    server.call(1, "initialize", json!({"protocolVersion": 1}));
    let resumes: Vec<Duration> = (0..10)
        .map(|i| {
            let started = Instant::now();
            let resumed = server.call(
                10 + 2 * i,
                "session/resume",
                json!({"sessionId": session, "cwd": dir, "mcpServers": []}),
            );
            let took = started.elapsed();
            assert!(resumed["result"].is_object(), "{resumed}");
            server.call(11 + 2 * i, "session/close", json!({"sessionId": session}));
            took
        })
        .collect();
    println!(
        "session/resume of a session with {total} events: {}",
        percentiles(resumes)
    );
    server.finish();
    drop(kept);
}

/// `session/set_config_option` round trip: the mode, switched back and forth.
fn option_round_trip() {
    let (mut agent, _) = Agent::start(json!([]));
    agent.initialize();
    let session = agent.session();
    let trips: Vec<Duration> = (0..200)
        .map(|i| {
            let value = if i % 2 == 0 { "allow" } else { "ask" };
            let started = Instant::now();
            let id = agent.request(
                "session/set_config_option",
                json!({"sessionId": session, "configId": "mode", "value": value}),
            );
            let answer = agent.response(id);
            let took = started.elapsed();
            assert!(answer["result"]["configOptions"].is_array(), "{answer}");
            took
        })
        .collect();
    println!(
        "session/set_config_option round trip: {}",
        percentiles(trips)
    );
    agent.close();
}

/// `dsh acp` over the sessions stored under a directory, driven one request at a time.
struct Stored {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Stored {
    fn start(dir: &std::path::Path) -> Stored {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
            .args(["--data-dir"])
            .arg(dir.join("data"))
            .args(["--replay", "demo", "acp"])
            .current_dir(dir)
            .env("DSH_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Stored {
            child,
            stdin,
            lines,
        }
    }

    /// Sends a request; returns its response.
    fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let line: Value = serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap();
            if line["id"] == id && line.get("method").is_none() {
                return line;
            }
        }
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}
