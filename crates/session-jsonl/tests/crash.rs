//! Crash injection with real processes. A child (this test binary, re-executed) appends a
//! deterministic mix of events and reports every completed flush on its stdout; the parent
//! SIGKILLs it at a random point, then checks that nothing flushed was lost, the log loads
//! repaired and balanced, and appending continues. `DSH_CRASH_ITERATIONS` raises the count for
//! soak runs.
//!
//! A test binary of its own: forking children while other tests hold session files open would
//! let a child inherit a lock for the instant between fork and exec.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use dsh_session::repair::interrupted_turn_closers;
use dsh_session::{
    CloseIntent, EventType, EventVocabulary, Origin, SessionEvent, SessionHeader, SessionId,
    SessionPersistence,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use serde_json::json;
use serde_json::value::RawValue;

/// xorshift64*: deterministic, seedable, good enough to vary a workload.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn header() -> SessionHeader {
    SessionHeader {
        version: 1,
        id: SessionId::parse("crash").unwrap(),
        created_at: 1_767_225_600_000,
        cwd: "/crash/test".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    }
}

/// The child's whole event sequence for `seed`, as the child will write it.
fn workload(seed: u64) -> Vec<Arc<SessionEvent>> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Arc<SessionEvent>> = Vec::new();
    let mut push = |kind: &str, data: serde_json::Value| {
        let seq = out.len() as u64;
        out.push(Arc::new(SessionEvent {
            seq,
            kind: EventType::new(kind).unwrap(),
            time: 1_767_225_600_000 + seq as i64,
            ignorable: false,
            data: RawValue::from_string(data.to_string()).unwrap(),
        }));
    };
    for turn in 1..=12u32 {
        push("turn/start", json!({ "turn": turn }));
        for step in 1..=1 + rng.below(2) as u32 {
            push("step/start", json!({ "turn": turn, "step": step }));
            push(
                "user/message",
                json!({ "turn": turn, "step": step, "message": { "content": format!("prompt {turn}") } }),
            );
            for _ in 0..rng.below(4) {
                let size = if rng.below(10) == 0 {
                    10 + rng.below(200 * 1024)
                } else {
                    10 + rng.below(2_000)
                };
                push(
                    "assistant/chunk",
                    json!({ "turn": turn, "step": step, "chunk": { "text": "x".repeat(size as usize) } }),
                );
            }
            let calls: Vec<String> = (0..rng.below(3))
                .map(|i| format!("c{turn}-{step}-{i}"))
                .collect();
            let tool_calls: Vec<_> = calls
                .iter()
                .map(|id| json!({ "id": id, "name": "bash", "arguments": "{}" }))
                .collect();
            push(
                "assistant/message",
                json!({ "turn": turn, "step": step, "message": { "content": "", "tool_calls": tool_calls }, "model": "m" }),
            );
            for id in &calls {
                push(
                    "tool/call",
                    json!({ "turn": turn, "step": step, "call_id": id, "name": "bash", "arguments": "{}" }),
                );
                if rng.below(4) != 0 {
                    push(
                        "tool/result",
                        json!({ "turn": turn, "step": step, "call_id": id, "name": "bash", "content": "ok", "is_error": false }),
                    );
                }
            }
            push("step/end", json!({ "turn": turn, "step": step }));
        }
        push(
            "turn/end",
            json!({ "turn": turn, "reason": { "kind": "completed" } }),
        );
    }
    out
}

/// The child: runs only when the parent sets `DSH_CRASH_CHILD=<dir>:<seed>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_writer() {
    let Ok(spec) = std::env::var("DSH_CRASH_CHILD") else {
        return;
    };
    let (dir, seed) = spec.rsplit_once(':').unwrap();
    let seed: u64 = seed.parse().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir)).unwrap();
    let hd = header();
    p.create(&hd, Origin::New).await.unwrap();
    let mut rng = Rng::new(seed ^ 0xABCD);
    let events = workload(seed);
    let mut at = 0;
    while at < events.len() {
        let n = (1 + rng.below(6) as usize).min(events.len() - at);
        p.append(&hd.id, &events[at..at + n]).await.unwrap();
        at += n;
        if rng.below(3) == 0 {
            p.flush(&hd.id).await.unwrap();
            println!("flushed {at}");
            // Wait for the parent's go-ahead, so the kill lands near this point rather than
            // after a child that already finished.
            let mut ack = [0u8; 1];
            let _ = std::io::Read::read_exact(&mut std::io::stdin(), &mut ack);
        }
    }
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    println!("flushed {at}");
    println!("done");
}

/// One kill-and-check; `Ok(true)` when the load had something to repair.
fn iteration(seed: u64) -> Result<bool, String> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env(
            "DSH_CRASH_CHILD",
            format!("{}:{seed}", dir.path().display()),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rng = Rng::new(seed ^ 0x5555);
    let kill_after = rng.below(12);
    // Half the kills land right at a flush, half just after the child was let go again.
    let ack_last = rng.below(2) == 0;
    let mut flushed = 0u64;
    let mut reports = 0;
    let mut stdin = child.stdin.take().unwrap();
    let reader = BufReader::new(child.stdout.take().unwrap());
    for line in reader.lines() {
        let line = line.unwrap();
        // libtest prints "test child_writer ... " before the first report, on the same line.
        if let Some((_, n)) = line.split_once("flushed ") {
            flushed = n.parse().unwrap();
            reports += 1;
            if reports > kill_after {
                if ack_last {
                    let _ = stdin.write_all(b"g");
                    let _ = stdin.flush();
                }
                break;
            }
            let _ = stdin.write_all(b"g");
            let _ = stdin.flush();
        }
    }
    // SIGKILL: no destructor, no flush, the OS releases the lock.
    let _ = child.kill();
    let _ = child.wait();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
        let hd = header();
        let known = EventVocabulary::new();
        let loaded = match p.load(&hd.id, &known).await {
            Ok(loaded) => loaded,
            Err(dsh_session::PersistenceError::NotFound { .. }) if flushed == 0 => {
                return Ok(false);
            }
            Err(err) => return Err(format!("load failed: {err}")),
        };
        let expected = workload(seed);
        if (loaded.events.len() as u64) < flushed {
            return Err(format!(
                "only {} events survive, {flushed} were flushed",
                loaded.events.len()
            ));
        }
        let kept = loaded.events.len() - loaded.repair.closers as usize;
        for (got, want) in loaded.events[..kept].iter().zip(&expected) {
            if got.encode() != want.encode() {
                return Err(format!("event {} differs from what was written", got.seq));
            }
        }
        if !interrupted_turn_closers(&loaded.events).is_empty() {
            return Err("the loaded log still has an open turn".into());
        }
        let repaired = loaded.repair.closers + loaded.repair.dropped_records > 0;
        let next = loaded.events.len() as u64;
        p.create(
            &hd,
            Origin::Resume {
                next_seq: next,
                revision: loaded.revision,
            },
        )
        .await
        .map_err(|e| format!("resume failed: {e}"))?;
        let more = Arc::new(SessionEvent {
            seq: next,
            kind: EventType::new("turn/start").unwrap(),
            time: 1,
            ignorable: false,
            data: RawValue::from_string("{\"turn\":99}".into()).unwrap(),
        });
        p.append(&hd.id, &[more]).await.map_err(|e| e.to_string())?;
        p.close(&hd.id, CloseIntent::Flush)
            .await
            .map_err(|e| e.to_string())?;
        Ok(repaired)
    })
}

#[test]
fn sigkill_at_random_points_loses_nothing_flushed() {
    if std::env::var("DSH_CRASH_CHILD").is_ok() {
        return;
    }
    let iterations: u64 = std::env::var("DSH_CRASH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let mut repaired = 0;
    for seed in 1..=iterations {
        match iteration(seed) {
            Ok(true) => repaired += 1,
            Ok(false) => {}
            Err(why) => panic!("crash injection failed for seed {seed}: {why}"),
        }
    }
    // The kills must land mid-turn often enough for the test to mean something.
    assert!(
        repaired * 4 >= iterations,
        "only {repaired} of {iterations} kills left a log to repair"
    );
}
