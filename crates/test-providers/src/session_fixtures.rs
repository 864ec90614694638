//! Sessions as the persistence providers' tests write them: a header, an event, and the
//! crash injection both providers run — a deterministic workload from a seed (turns, steps,
//! chunks small and large, calls with and without results), the child that writes it and
//! reports each acknowledged flush, the parent that kills it at a random point, and the check
//! of what a load then finds.

use std::sync::Arc;

use dsh_session::{EventType, SessionEvent};
use serde_json::json;
use serde_json::value::RawValue;

/// xorshift64*: deterministic, seedable, good enough to vary a workload.
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// The child's whole event sequence for `seed`, as the child will write it.
pub fn workload(seed: u64) -> Vec<Arc<SessionEvent>> {
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

/// The header of a session `id` in a fixed directory.
pub fn header_for(id: &str) -> dsh_session::SessionHeader {
    dsh_session::SessionHeader {
        version: 1,
        id: dsh_session::SessionId::parse(id).unwrap(),
        created_at: 1_767_225_600_000,
        cwd: "/home/ana/src/app".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    }
}

/// The session every crash injection writes.
pub fn header() -> dsh_session::SessionHeader {
    header_for("crash")
}

/// One event of a test's own making.
pub fn event(seq: u64, kind: &str, data: serde_json::Value) -> Arc<SessionEvent> {
    Arc::new(SessionEvent {
        seq,
        kind: EventType::new(kind).unwrap(),
        time: 1_767_225_600_100 + seq as i64,
        ignorable: false,
        data: RawValue::from_string(data.to_string()).unwrap(),
    })
}

/// The child's side: writes `seed`'s workload to `p` in random batches, flushing now and
/// then; after each acknowledged flush reports `flushed <events>` (the child prints it to its
/// parent) and waits for the parent's byte on stdin, so the kill lands near that point. Once
/// closed it reports `closed <events>`.
pub async fn write_reporting(
    p: &dyn dsh_session::SessionPersistence,
    seed: u64,
    say: impl Fn(&str),
) {
    let hd = header();
    p.create(&hd, dsh_session::Origin::New).await.unwrap();
    let mut rng = Rng::new(seed ^ 0xABCD);
    let events = workload(seed);
    let mut at = 0;
    while at < events.len() {
        let n = (1 + rng.below(6) as usize).min(events.len() - at);
        p.append(&hd.id, &events[at..at + n]).await.unwrap();
        at += n;
        if rng.below(3) == 0 {
            p.flush(&hd.id).await.unwrap();
            say(&format!("flushed {at}"));
            let mut ack = [0u8; 1];
            let _ = std::io::Read::read_exact(&mut std::io::stdin(), &mut ack);
        }
    }
    p.close(&hd.id, dsh_session::CloseIntent::Flush)
        .await
        .unwrap();
    say(&format!("closed {at}"));
}

/// Where a child was killed.
pub struct Killed {
    /// How many events it had acknowledged as stored.
    pub flushed: u64,
    /// Whether it had finished (closed) first.
    pub finished: bool,
}

/// The parent's side: reads the child's reports and SIGKILLs it after a random number of
/// them (`seed`'s), half the time right at a flush, half just after letting it go on.
pub fn kill_at_random(child: &mut std::process::Child, seed: u64) -> Killed {
    use std::io::{BufRead, BufReader, Write};
    let mut rng = Rng::new(seed ^ 0x5555);
    let kill_after = rng.below(12);
    let ack_last = rng.below(2) == 0;
    let mut killed = Killed {
        flushed: 0,
        finished: false,
    };
    let mut reports = 0;
    let mut stdin = child.stdin.take().unwrap();
    let reader = BufReader::new(child.stdout.take().unwrap());
    for line in reader.lines() {
        let line = line.unwrap();
        // libtest prints "test child_writer ... " before the first report, on the same line.
        if let Some((_, n)) = line.split_once("closed ") {
            killed = Killed {
                flushed: n.parse().unwrap(),
                finished: true,
            };
            break;
        }
        if let Some((_, n)) = line.split_once("flushed ") {
            killed.flushed = n.parse().unwrap();
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
    // SIGKILL: no destructor, no flush, nothing given up.
    let _ = child.kill();
    let _ = child.wait();
    killed
}

/// Checks a killed writer's session as `p` loaded it: every acknowledged event there and as
/// written, nothing after them but what was written, the open turn closed, and appending
/// going on. `Ok(true)` when the load had something to repair.
pub async fn check_loaded(
    p: &dyn dsh_session::SessionPersistence,
    loaded: dsh_session::LoadedSession,
    seed: u64,
    flushed: u64,
) -> Result<bool, String> {
    let hd = header();
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
    if !dsh_session::repair::interrupted_turn_closers(&loaded.events).is_empty() {
        return Err("the loaded log still has an open turn".into());
    }
    let repaired = loaded.repair.closers + loaded.repair.dropped_records > 0;
    let next = loaded.events.len() as u64;
    p.create(
        &hd,
        dsh_session::Origin::Resume {
            next_seq: next,
            revision: loaded.revision,
        },
    )
    .await
    .map_err(|e| format!("resume failed: {e}"))?;
    let more = event(next, "turn/start", json!({ "turn": 99 }));
    p.append(&hd.id, &[more]).await.map_err(|e| e.to_string())?;
    p.close(&hd.id, dsh_session::CloseIntent::Flush)
        .await
        .map_err(|e| e.to_string())?;
    let again = p
        .inspect(&hd.id, &dsh_session::EventVocabulary::new())
        .await
        .map_err(|e| e.to_string())?;
    match again.events.len() as u64 == next + 2 {
        true => Ok(repaired),
        false => Err(format!("{} events after one more", again.events.len())),
    }
}
