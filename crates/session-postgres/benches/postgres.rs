//! The PostgreSQL provider's budgets against a local server, with the JSONL provider's figures
//! beside them, measured the same way in the same run:
//! - append with a flush barrier every 10 events (events/s);
//! - cold load of a 100 000-event session;
//! - listing 10 000 sessions;
//! - `create` of a new session (what `session/new` asks of the store), p50.
//!
//! Run with `cargo bench -p dsh-session-postgres --bench postgres`; it uses
//! `DSH_TEST_POSTGRES_URL`, else starts a private server from the machine's PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
#![allow(missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, Origin, SessionEvent, SessionPersistence,
};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};
use dsh_test_providers::providers::{JsonlConfig, JsonlPersistence};
use dsh_test_providers::session_fixtures::{event, header_for as header};

/// A balanced run of `n` events from `first`: turns of one step each, a chunk of about 200
/// bytes the most common event.
fn events(first: u64, n: u64) -> Vec<Arc<SessionEvent>> {
    let text = "x".repeat(180);
    (first..first + n)
        .map(|seq| {
            let turn = seq / 6 + 1;
            match seq % 6 {
                0 => event(seq, "turn/start", serde_json::json!({"turn": turn})),
                1 => event(
                    seq,
                    "step/start",
                    serde_json::json!({"turn": turn, "step": 1}),
                ),
                4 => event(
                    seq,
                    "step/end",
                    serde_json::json!({"turn": turn, "step": 1}),
                ),
                5 => event(
                    seq,
                    "turn/end",
                    serde_json::json!({"turn": turn, "reason": {"kind": "completed"}}),
                ),
                _ => event(
                    seq,
                    "assistant/chunk",
                    serde_json::json!({"turn": turn, "step": 1, "chunk": {"text": text}}),
                ),
            }
        })
        .collect()
}

fn p50(mut samples: Vec<Duration>) -> Duration {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

async fn append_rate(p: &dyn SessionPersistence, id: &str) -> f64 {
    let hd = header(id);
    let all = events(0, 20_000);
    p.create(&hd, Origin::New).await.unwrap();
    let started = Instant::now();
    for batch in all.chunks(10) {
        p.append(&hd.id, batch).await.unwrap();
        p.flush(&hd.id).await.unwrap();
    }
    let rate = all.len() as f64 / started.elapsed().as_secs_f64();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    rate
}

async fn cold_load(
    fresh: impl Fn() -> Arc<dyn SessionPersistence>,
    writer: &dyn SessionPersistence,
) -> Duration {
    let hd = header("hundred-thousand");
    writer.create(&hd, Origin::New).await.unwrap();
    for batch in events(0, 100_000).chunks(1_000) {
        writer.append(&hd.id, batch).await.unwrap();
        writer.flush(&hd.id).await.unwrap();
    }
    writer.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let mut samples = Vec::new();
    for _ in 0..5 {
        let p = fresh();
        let started = Instant::now();
        let loaded = p.inspect(&hd.id, &EventVocabulary::new()).await.unwrap();
        samples.push(started.elapsed());
        assert!(loaded.events.len() >= 100_000);
    }
    p50(samples)
}

async fn listing(p: &dyn SessionPersistence) -> Duration {
    let one = events(0, 6);
    for i in 0..10_000 {
        let hd = header(&format!("listed-{i:05}"));
        p.create(&hd, Origin::New).await.unwrap();
        p.append(&hd.id, &one).await.unwrap();
        p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    }
    let mut samples = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let listed = p.list(&ListQuery::default()).await.unwrap();
        samples.push(started.elapsed());
        assert!(listed.sessions.len() >= 10_000);
    }
    p50(samples)
}

async fn creates(p: &dyn SessionPersistence) -> Duration {
    let mut samples = Vec::new();
    for i in 0..500 {
        let hd = header(&format!("created-{i:04}"));
        let started = Instant::now();
        p.create(&hd, Origin::New).await.unwrap();
        samples.push(started.elapsed());
        p.close(&hd.id, CloseIntent::Abandon).await.unwrap();
    }
    p50(samples)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    runtime.block_on(async {
        let postgres = |schema: &str| {
            let mut config = PostgresConfig::new(url.clone());
            config.schema = format!("bench_{schema}_{}", std::process::id());
            config
        };
        let dir = tempfile::tempdir().unwrap();
        let jsonl = |sub: &str| -> Arc<dyn SessionPersistence> {
            JsonlPersistence::new(JsonlConfig::new(dir.path().join(sub))).unwrap()
        };
        let pg = |schema: &str| {
            let config = postgres(schema);
            async move { PostgresPersistence::connect(config).await.unwrap() as Arc<dyn SessionPersistence> }
        };

        let rate_pg = append_rate(&*pg("append").await, "appended").await;
        let rate_files = append_rate(&*jsonl("append"), "appended").await;
        println!("append, a flush every 10 events: postgres {rate_pg:.0} events/s, jsonl {rate_files:.0} events/s");

        let writer = pg("load").await;
        let config = postgres("load");
        let fresh_pg = || {
            let config = config.clone();
            std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        tokio::runtime::Runtime::new()
                            .unwrap()
                            .block_on(PostgresPersistence::connect(config))
                            .unwrap() as Arc<dyn SessionPersistence>
                    })
                    .join()
                    .unwrap()
            })
        };
        let load_pg = cold_load(fresh_pg, &*writer).await;
        let load_files = cold_load(|| jsonl("load"), &*jsonl("load")).await;
        println!("cold load of 100 000 events: postgres {load_pg:?}, jsonl {load_files:?} (p50 of 5)");

        let list_pg = listing(&*pg("list").await).await;
        let list_files = listing(&*jsonl("list")).await;
        println!("listing 10 000 sessions: postgres {list_pg:?}, jsonl {list_files:?} (p50 of 7)");

        let new_pg = creates(&*pg("create").await).await;
        let new_files = creates(&*jsonl("create")).await;
        println!("create of a new session: postgres {new_pg:?}, jsonl {new_files:?} (p50 of 500)");
    });
}
