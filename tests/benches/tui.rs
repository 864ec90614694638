//! The interactive terminal measured from outside, as a person's terminal sees it: the
//! release `dsh` on a pseudo-terminal, its screen read through a terminal emulator, against
//! the mock model server on 127.0.0.1.
//!
//! Figures (p50 / p99 unless said): launch → first frame (the first bytes drawn), launch →
//! ready for input (the composer drawn), keystroke → echo on an idle session and while the
//! model streams 200 chunks a second, the longest echo while a 1 MB answer streams, Enter →
//! the request at the model, the CPU time used while idle, and the RSS of the process tree
//! after one answer and after a 1,000-message session.
//!
//! Run with `cargo bench -p dsh-e2e --bench tui`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::time::{Duration, Instant};

use dsh_e2e::tui::Tui;
use dsh_e2e::{Sandbox, percentiles};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

const ROWS: u16 = 40;
const COLS: u16 = 120;

fn start(sandbox: &Sandbox, base: &str) -> Tui {
    Tui::start(
        sandbox,
        &["--base-url", base, "--model", "m", "--permission", "allow"],
        &[("DSH_API_KEY_ENV", "")],
        ROWS,
        COLS,
    )
}

/// Types one character and waits until the composer shows `expected`.
fn echo(tui: &Tui, key: u8, expected: &str) -> Duration {
    let typed = Instant::now();
    tui.keys(&[key]);
    tui.wait_until("the echo", |s| s.lines().any(|l| l.trim_end() == expected));
    typed.elapsed()
}

/// Echo samples: `n` characters typed one by one, `gap` apart (as a person types, so that
/// they spread over a stream), the composer cleared now and then.
fn echoes(tui: &Tui, n: usize, gap: Duration) -> Vec<Duration> {
    let mut samples = Vec::new();
    let mut typed = String::new();
    for i in 0..n {
        std::thread::sleep(gap);
        let c = b'a' + (i % 26) as u8;
        typed.push(c as char);
        samples.push(echo(tui, c, &format!("› {typed}")));
        if typed.len() >= 60 {
            // Ctrl-U clears the line.
            tui.keys(b"\x15");
            tui.wait_until("an empty composer", |s| {
                s.lines().any(|l| l.trim_end() == "›")
            });
            typed.clear();
        }
    }
    tui.keys(b"\x15");
    samples
}

/// The CPU time (user + system) a process used so far.
fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// The RSS of `pid` and its descendants, in KiB.
fn tree_rss(pid: u32) -> u64 {
    let mut total = 0;
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        total += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        let children =
            std::fs::read_to_string(format!("/proc/{p}/task/{p}/children")).unwrap_or_default();
        todo.extend(
            children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    total
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(MockModelServer::start(Vec::new()));
    let base = server.base_url();
    // Warm the page cache.
    dsh_e2e::binary();

    // Launch: the first bytes drawn, and the composer ready.
    let mut first_frame = Vec::new();
    let mut ready = Vec::new();
    for _ in 0..21 {
        let sandbox = Sandbox::new();
        let launched = Instant::now();
        let tui = start(&sandbox, &base);
        tui.wait_until("a frame", |s| s.contains('─'));
        first_frame.push(launched.elapsed());
        tui.wait_until("the composer", |s| s.lines().any(|l| l.starts_with('›')));
        ready.push(launched.elapsed());
        tui.keys(b"\x04");
        tui.exit();
    }
    println!("launch → first frame: {}", percentiles(first_frame));
    println!("launch → ready for input: {}", percentiles(ready));

    // Echo on an idle session, then idle CPU.
    let sandbox = Sandbox::new();
    let tui = start(&sandbox, &base);
    tui.wait_until("the composer", |s| s.lines().any(|l| l.starts_with('›')));
    println!(
        "keystroke → echo, idle: {}",
        percentiles(echoes(&tui, 300, Duration::ZERO))
    );
    tui.wait_until("an empty composer", |s| {
        s.lines().any(|l| l.trim_end() == "›")
    });
    let before = cpu(tui.pid);
    let idle = Duration::from_secs(10);
    std::thread::sleep(idle);
    let used = cpu(tui.pid) - before;
    println!(
        "CPU while idle: {} ms over {} s ({:.2} % of a core)",
        used.as_millis(),
        idle.as_secs(),
        used.as_secs_f64() * 100.0 / idle.as_secs_f64()
    );

    // Enter → request at the model, and the RSS after answers.
    let mut enter = Vec::new();
    for i in 0..30 {
        server.push(MockResponse::text(&format!("ok {i}")));
        let prompt = format!("prompt number {i}");
        tui.keys(prompt.as_bytes());
        tui.wait_until("the prompt typed", |s| s.contains(&prompt));
        let pressed = Instant::now();
        tui.keys(b"\r");
        runtime.block_on(server.wait_arrival(i));
        enter.push(pressed.elapsed());
        let answer = format!("ok {i}");
        tui.wait_until("the answer", |s| {
            s.lines().any(|l| l.trim_end() == answer) && !s.contains("esc to interrupt")
        });
        if i == 0 {
            println!(
                "tree RSS after one answer: {} MiB",
                tree_rss(tui.pid) / 1024
            );
        }
    }
    println!("Enter → request at the model: {}", percentiles(enter));

    // Echo while the model streams 200 chunks a second.
    let words: Vec<String> = (0..1000).map(|i| format!("word{i} ")).collect();
    let pieces: Vec<&str> = words.iter().map(String::as_str).collect();
    server.push(MockResponse::pieces(&pieces).delay_between(Duration::from_millis(5)));
    tui.keys(b"stream\r");
    tui.wait_until("the stream", |s| s.contains("word1"));
    // 200 keys 20 ms apart: four of the stream's five seconds.
    let streaming = echoes(&tui, 200, Duration::from_millis(20));
    assert!(
        tui.screen().contains("esc to interrupt"),
        "the stream ended before the keys"
    );
    println!(
        "keystroke → echo while streaming 200 chunks/s: {}",
        percentiles(streaming)
    );
    tui.wait_until("the turn's end", |s| !s.contains("esc to interrupt"));

    // A 1 MB answer: the longest echo while it streams.
    let kilobyte = format!("{}\n", "x".repeat(1023));
    let pieces: Vec<&str> = (0..1024).map(|_| kilobyte.as_str()).collect();
    server.push(MockResponse::pieces(&pieces).delay_between(Duration::from_millis(2)));
    tui.keys(b"big\r");
    tui.wait_until("the big answer", |s| s.contains("xxxxxxxxxx"));
    // 100 keys 15 ms apart, over most of the two seconds the megabyte takes.
    let during = echoes(&tui, 100, Duration::from_millis(15));
    assert!(
        tui.screen().contains("esc to interrupt"),
        "the answer ended before the keys"
    );
    let longest = during.iter().max().copied().unwrap_or_default();
    println!(
        "keystroke → echo while a 1 MB answer streams: {} (longest {longest:?})",
        percentiles(during)
    );
    tui.wait_until("the turn's end", |s| !s.contains("esc to interrupt"));
    tui.keys(b"\x04");
    tui.exit();

    // A 1,000-message session, resumed: its RSS.
    let sandbox = Sandbox::new();
    let tui = start(&sandbox, &base);
    tui.wait_until("the composer", |s| s.lines().any(|l| l.starts_with('›')));
    let arrived = server.requests().len();
    for i in 0..500 {
        server.push(MockResponse::text(&format!("answer {i}")));
        tui.keys(format!("question {i}\r").as_bytes());
        runtime.block_on(server.wait_arrival(arrived + i));
        let answer = format!("answer {i}");
        tui.wait_until("the answer", |s| {
            s.lines().any(|l| l.trim_end() == answer) && !s.contains("esc to interrupt")
        });
    }
    tui.wait_until("the turn's end", |s| !s.contains("esc to interrupt"));
    println!(
        "tree RSS after a 1,000-message session: {} MiB",
        tree_rss(tui.pid) / 1024
    );
    tui.keys(b"\x04");
    tui.exit();
}
