//! `dsh run`'s human renderer, measured on the built binary: events per second through
//! `dsh sessions show` (the same renderer a live run uses) on a stored 10,000-event log of
//! streamed answers, commands with output and file edits. With `DSH_BASELINE=/path/to/dsh`
//! (an older build) the same log is shown by both, alternating, in one run.
//! Run with `cargo bench -p dsh --bench render`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const EVENTS: usize = 10_000;
const ROUNDS: usize = 15;

/// One step of a turn: a few streamed pieces, an answer, a command with its result, an
/// edit with its diff.
fn step(turn: u32, step: u32) -> Vec<(&'static str, Value)> {
    let at = json!({"turn": turn, "step": step});
    let with = |extra: Value| {
        let mut v = at.clone();
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let mut out = vec![("step/start", at.clone())];
    for piece in ["Looking at ", "the code ", "now.\n"] {
        out.push((
            "assistant/chunk",
            with(json!({"chunk": {"text_delta": piece}})),
        ));
    }
    out.push((
        "assistant/message",
        with(
            json!({"message": {"content": "Looking at the code now.\n"}, "model": "m",
                    "context": {"used": 1000, "window": 32768, "estimated": true}}),
        ),
    ));
    let call = format!("c{turn}_{step}");
    out.push((
        "tool/call",
        with(json!({"call_id": format!("{call}a"), "name": "bash",
                    "arguments": json!({"command": "ls -la src"}).to_string()})),
    ));
    out.push((
        "tool/result",
        with(json!({"call_id": format!("{call}a"), "name": "bash",
                    "content": "main.rs\nlib.rs\nrender.rs\n[exit code: 0]", "is_error": false,
                    "meta": {"exit_code": 0, "signal": null, "timed_out": false}})),
    ));
    out.push((
        "tool/call",
        with(json!({"call_id": format!("{call}b"), "name": "edit",
                    "arguments": json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"}).to_string()})),
    ));
    out.push((
        "tool/result",
        with(json!({"call_id": format!("{call}b"), "name": "edit",
                    "content": "edited src/lib.rs: 1 replacement at line 2.", "is_error": false,
                    "meta": {"path": "/work/src/lib.rs", "summary": "edited src/lib.rs: 1 replacement at line 2",
                             "first_line": 1, "old_text": "x\na\ny\n", "new_text": "x\nb\ny\n"}})),
    ));
    out.push(("step/end", at));
    out
}

/// A stored session of about [`EVENTS`] events; returns its id.
fn store(data: &Path) -> String {
    let id = "01a24cf7-2273-7407-bb3c-8c9b64784fc0";
    let dir = data.join("sessions").join("bench");
    std::fs::create_dir_all(&dir).unwrap();
    let mut log = json!({"format": "dsh-session", "version": 1, "id": id,
                         "created_at": 1_796_587_405_203_i64, "cwd": "/work"})
    .to_string();
    log.push('\n');
    let mut events: Vec<(&str, Value)> = Vec::new();
    let mut turn = 0;
    while events.len() < EVENTS {
        turn += 1;
        events.push(("turn/start", json!({"turn": turn})));
        events.push((
            "user/message",
            json!({"turn": turn, "step": 1, "message": {"id": format!("m{turn}"),
                   "source": {"kind": "user"}, "text": "go on"}}),
        ));
        for s in 1..=5 {
            events.extend(step(turn, s));
        }
        events.push((
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "completed"}}),
        ));
    }
    for (seq, (kind, data)) in events.into_iter().enumerate() {
        let time = 1_796_587_405_204_i64 + seq as i64;
        let line = json!({"seq": seq, "type": kind, "time": time, "data": data});
        log.push_str(&line.to_string());
        log.push('\n');
    }
    std::fs::write(dir.join(format!("{id}.jsonl")), log).unwrap();
    id.to_owned()
}

fn show(binary: &Path, data: &Path, id: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new(binary)
        .args(["sessions", "show", "--color", "always", "--data-dir"])
        .arg(data)
        .arg(id)
        .env("HOME", data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let took = started.elapsed();
    assert!(status.success(), "{} failed", binary.display());
    took
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let id = store(&data);
    let this = Path::new(env!("CARGO_BIN_EXE_dsh")).to_path_buf();
    let baseline = std::env::var_os("DSH_BASELINE").map(std::path::PathBuf::from);
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..ROUNDS {
        ours.push(show(&this, &data, &id));
        if let Some(baseline) = &baseline {
            theirs.push(show(baseline, &data, &id));
        }
    }
    let report = |name: &str, samples: Vec<Duration>| {
        let took = median(samples);
        println!(
            "{name}: {EVENTS} events shown in {took:.1?} (median of {ROUNDS}) · {:.0} events/s",
            EVENTS as f64 / took.as_secs_f64()
        );
    };
    report(&format!("this build ({})", this.display()), ours);
    if let Some(baseline) = baseline {
        report(&format!("baseline ({})", baseline.display()), theirs);
    }
}
