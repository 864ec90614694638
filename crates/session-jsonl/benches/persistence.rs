//! Session persistence budgets, measured on the real file system:
//! B1 append throughput through store, bridge and provider; B2 the flush barrier against a raw
//! fdatasync; B3 cold load of a 100 000-event session; B4 listing 10 000 sessions; B5 memory
//! per live idle session. Run with `cargo bench -p dsh-session-jsonl --bench persistence`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsh_kernel::Runtime;
use dsh_session::{
    CloseIntent, EventType, EventVocabulary, Interest, ListQuery, Origin, PersistenceBridge,
    SessionEvent, SessionHeader, SessionId, SessionPersistence, SessionSpec, SessionStore,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use serde_json::value::RawValue;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn header(id: &str, cwd: &str) -> SessionHeader {
    SessionHeader {
        version: 1,
        id: SessionId::parse(id).unwrap(),
        created_at: 1,
        cwd: cwd.into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    }
}

/// 1 KiB events appended through the store until the final flush returns.
fn append_throughput(c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let persistence = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    store
        .subscribe(
            runtime.scope(),
            Interest::All,
            PersistenceBridge::new(persistence),
        )
        .unwrap();
    let kind = EventType::new("user/message").unwrap();
    let payload = "p".repeat(1000);
    const N: u64 = 20_000;
    let mut group = c.benchmark_group("b1");
    group.throughput(Throughput::Elements(N)).sample_size(10);
    group.bench_function("append_1kib_events_then_flush", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = store.create(SessionSpec::new("/bench")).await.unwrap();
                    let started = Instant::now();
                    for _ in 0..N {
                        s.append(&kind, &payload).unwrap();
                    }
                    store.flush(s.id()).await.unwrap();
                    total += started.elapsed();
                    store.detach(&s).await.unwrap();
                }
                total
            })
        })
    });
    group.bench_function("append_only_no_observers", |b| {
        let bare = SessionStore::new();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let s = bare.create(SessionSpec::new("/bench")).await.unwrap();
                    let started = Instant::now();
                    for _ in 0..N {
                        s.append(&kind, &payload).unwrap();
                    }
                    total += started.elapsed();
                    bare.detach(&s).await.unwrap();
                }
                total
            })
        })
    });
    group.finish();
}

/// A flush with ≤ 64 KiB buffered, next to a raw write + fdatasync of the same bytes.
fn flush_barrier(c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("flush", "/bench");
    let event = |seq: u64| {
        Arc::new(SessionEvent {
            seq,
            kind: EventType::new("user/message").unwrap(),
            time: 1,
            ignorable: false,
            data: RawValue::from_string(format!("\"{}\"", "q".repeat(1000))).unwrap(),
        })
    };
    rt.block_on(async {
        p.create(&hd, Origin::New).await.unwrap();
        p.append(&hd.id, &[event(0)]).await.unwrap();
        p.flush(&hd.id).await.unwrap();
    });
    let mut seq = 1;
    let mut group = c.benchmark_group("b2");
    group.sample_size(50);
    group.bench_function("flush_60_kib", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let batch: Vec<_> = (seq..seq + 60).map(event).collect();
                    seq += 60;
                    p.append(&hd.id, &batch).await.unwrap();
                    let started = Instant::now();
                    p.flush(&hd.id).await.unwrap();
                    total += started.elapsed();
                }
                total
            })
        })
    });
    let raw = dir.path().join("raw");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&raw)
        .unwrap();
    let bytes = vec![b'r'; 60 * 1070];
    group.bench_function("raw_write_and_fdatasync_60_kib", |b| {
        b.iter(|| {
            file.write_all(&bytes).unwrap();
            file.sync_data().unwrap();
        })
    });
    group.finish();
    rt.block_on(async { p.close(&hd.id, CloseIntent::Flush).await.unwrap() });
}

/// Cold load of a 100 000-event balanced session of about 30 MB.
/// A 100 000-event session of one repeated letter: the shape the budget was first set on.
fn uniform_events() -> Vec<Arc<SessionEvent>> {
    events_from(|seq, turn| match seq % 10 {
        0 => ("turn/start", format!("{{\"turn\":{turn}}}")),
        9 => (
            "turn/end",
            format!("{{\"turn\":{turn},\"reason\":{{\"kind\":\"completed\"}}}}"),
        ),
        _ => (
            "assistant/chunk",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"chunk\":{{\"text\":\"{}\"}}}}",
                "c".repeat(230)
            ),
        ),
    })
}

/// A realistic transcript, about 320 bytes an event: prose with quotes, escaped newlines
/// and non-ASCII text, tool calls, and tool output the way bash results look.
fn realistic_events() -> Vec<Arc<SessionEvent>> {
    let prose = "Let me look at \\\"src/main.rs\\\" first — it's where the «entry point» lives.\\nThen I'll run the tests: naïve café ☕ 日本語 🚀.";
    let output = "running 12 tests\\ntest parse::ok ... ok\\ntest parse::\\\"quoted\\\" ... FAILED\\n\\tat src/lib.rs:42:7\\n[exit code: 101]";
    events_from(move |seq, turn| match seq % 10 {
        0 => ("turn/start", format!("{{\"turn\":{turn}}}")),
        1 => (
            "user/message",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"message\":{{\"content\":\"{prose} Please fix the failing test in «parse» — thanks!\"}}}}"
            ),
        ),
        4 => (
            "tool/call",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"call_id\":\"call_{seq}\",\"name\":\"bash\",\"arguments\":\"{{\\\"command\\\":\\\"cargo test -p parse 2>&1 | tail -n 40\\\",\\\"description\\\":\\\"Run the parser's tests\\\"}}\"}}"
            ),
        ),
        5 => (
            "tool/result",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"call_id\":\"call_{seq}\",\"name\":\"bash\",\"content\":\"{output}\",\"is_error\":false,\"meta\":{{\"exit_code\":101}}}}"
            ),
        ),
        9 => (
            "turn/end",
            format!("{{\"turn\":{turn},\"reason\":{{\"kind\":\"completed\"}}}}"),
        ),
        _ => (
            "assistant/chunk",
            format!(
                "{{\"turn\":{turn},\"step\":1,\"chunk\":{{\"text\":\"{prose} \\\"ok\\\" {prose}\"}}}}"
            ),
        ),
    })
}

fn events_from(make: impl Fn(u64, u64) -> (&'static str, String)) -> Vec<Arc<SessionEvent>> {
    (0..100_000u64)
        .map(|seq| {
            let (kind, data) = make(seq, seq / 10 + 1);
            Arc::new(SessionEvent {
                seq,
                kind: EventType::new(kind).unwrap(),
                time: 1_767_225_600_000 + seq as i64,
                ignorable: false,
                data: RawValue::from_string(data).unwrap(),
            })
        })
        .collect()
}

fn cold_load(c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let known = EventVocabulary::new();
    let mut group = c.benchmark_group("b3");
    group.sample_size(10);
    for (name, events) in [
        ("uniform", uniform_events()),
        ("realistic", realistic_events()),
    ] {
        let hd = header(&format!("cold-{name}"), "/bench");
        let bytes: usize = events.iter().map(|e| e.data.get().len()).sum();
        eprintln!(
            "b3 {name}: {} payload bytes an event on average",
            bytes / events.len()
        );
        rt.block_on(async {
            p.create(&hd, Origin::New).await.unwrap();
            for chunk in events.chunks(5_000) {
                p.append(&hd.id, chunk).await.unwrap();
            }
            p.close(&hd.id, CloseIntent::Flush).await.unwrap();
        });
        group.bench_function(format!("cold_load_100k_events_{name}"), |b| {
            b.iter(|| rt.block_on(async { p.load(&hd.id, &known).await.unwrap() }))
        });
    }
    group.finish();
}

/// Listing 10 000 sessions in 100 project directories, headers only.
fn listing(c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let event = Arc::new(SessionEvent {
        seq: 0,
        kind: EventType::new("turn/start").unwrap(),
        time: 1,
        ignorable: false,
        data: RawValue::from_string("{\"turn\":1}".into()).unwrap(),
    });
    rt.block_on(async {
        for i in 0..10_000 {
            let hd = header(&format!("s{i:05}"), &format!("/project/{}", i % 100));
            p.create(&hd, Origin::New).await.unwrap();
            p.append(&hd.id, std::slice::from_ref(&event))
                .await
                .unwrap();
            p.close(&hd.id, CloseIntent::Flush).await.unwrap();
        }
    });
    let mut group = c.benchmark_group("b4");
    group.sample_size(10);
    group.bench_function("list_10k_sessions", |b| {
        b.iter(|| rt.block_on(async { p.list(&ListQuery::default()).await.unwrap() }))
    });
    group.finish();
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Resident memory per live idle session (printed, not timed).
fn memory(_c: &mut Criterion) {
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let persistence = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    store
        .subscribe(
            runtime.scope(),
            Interest::All,
            PersistenceBridge::new(persistence),
        )
        .unwrap();
    let kind = EventType::new("turn/start").unwrap();
    rt.block_on(async {
        let before = rss_kib();
        let mut live = Vec::new();
        for turn in 0..10_000 {
            let s = store.create(SessionSpec::new("/bench")).await.unwrap();
            s.append(&kind, &serde_json::json!({ "turn": turn }))
                .unwrap();
            store.flush(s.id()).await.unwrap();
            live.push(s);
        }
        let after = rss_kib();
        println!(
            "b5/memory_per_live_idle_session: {:.1} KiB ({} sessions, one event each)",
            (after.saturating_sub(before)) as f64 / live.len() as f64,
            live.len()
        );
        for s in &live {
            store.detach(s).await.unwrap();
        }
    });
}

criterion_group!(
    benches,
    memory,
    append_throughput,
    flush_barrier,
    cold_load,
    listing
);
criterion_main!(benches);
