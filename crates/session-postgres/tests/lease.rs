//! One writer per session across processes: two provider instances (two holders, as two
//! `dsh` processes on two machines would be) over one real PostgreSQL. The lease's clock is
//! the server's, so a test that needs a lease to have expired sets its expiry in the past
//! rather than waiting.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use dsh_session::{
    CloseIntent, EventVocabulary, Origin, PersistenceError, SessionHeader, SessionPersistence,
};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};
use dsh_test_providers::postgres::expire_leases;
use dsh_test_providers::session_fixtures::{event, header_for as header};

async fn instance(url: &str, schema: &str, host: &str) -> Arc<PostgresPersistence> {
    let mut config = PostgresConfig::new(url);
    config.schema = schema.into();
    config.host = host.into();
    PostgresPersistence::connect(config).await.unwrap()
}

/// A schema of this run's own, so a database kept between runs starts each test empty.
fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}_{}_{nanos}", std::process::id())
}

/// A stored session whose turn 1 is open (its writer died mid-turn).
async fn stored_mid_turn(p: &PostgresPersistence, id: &str) -> SessionHeader {
    let hd = header(id);
    p.create(&hd, Origin::New).await.unwrap();
    p.append(
        &hd.id,
        &[
            event(0, "turn/start", serde_json::json!({"turn": 1})),
            event(1, "step/start", serde_json::json!({"turn": 1, "step": 1})),
        ],
    )
    .await
    .unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    hd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_holders_racing_for_a_session_exactly_one_writes_and_the_other_is_told_where() {
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    let schema = &unique("lease_race");
    let a = instance(&url, schema, "workstation").await;
    let b = instance(&url, schema, "build-box").await;
    let hd = stored_mid_turn(&a, "raced").await;
    let known = EventVocabulary::new();
    let loaded = a.inspect(&hd.id, &known).await.unwrap();
    let origin = Origin::Resume {
        next_seq: loaded.events.len() as u64,
        revision: loaded.revision.clone(),
    };
    let (first, second) = tokio::join!(a.create(&hd, origin.clone()), b.create(&hd, origin));
    let (won, lost) = match (&first, &second) {
        (Ok(()), Err(e)) => ("workstation", e),
        (Err(e), Ok(())) => ("build-box", e),
        other => panic!("exactly one must win: {other:?}"),
    };
    assert!(matches!(lost, PersistenceError::Locked { .. }), "{lost}");
    assert!(
        lost.to_string().contains("open in another dsh process"),
        "{lost}"
    );
    assert!(
        lost.to_string().contains(&format!("on host {won}")),
        "{lost}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holder_s_session_is_taken_over_and_its_late_write_is_refused() {
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    let schema = &unique("lease_takeover");
    let old = instance(&url, schema, "crashed-box").await;
    let new = instance(&url, schema, "rescuer").await;
    let hd = stored_mid_turn(&old, "taken-over").await;
    let known = EventVocabulary::new();
    let seen = old.inspect(&hd.id, &known).await.unwrap();
    old.create(
        &hd,
        Origin::Resume {
            next_seq: 2,
            revision: seen.revision,
        },
    )
    .await
    .unwrap();
    // While the holder's lease is alive, nobody else may load (and repair) it.
    let refused = new.load(&hd.id, &known).await.unwrap_err();
    assert!(
        matches!(refused, PersistenceError::Locked { .. }),
        "{refused}"
    );
    // The holder stalls past its lease: it is taken over, repaired and written.
    expire_leases(&url, schema).await;
    let loaded = new.load(&hd.id, &known).await.unwrap();
    assert_eq!(loaded.repair.closers, 2, "the open step and turn closed");
    let next = loaded.events.len() as u64;
    new.create(
        &hd,
        Origin::Resume {
            next_seq: next,
            revision: loaded.revision,
        },
    )
    .await
    .unwrap();
    new.append(
        &hd.id,
        &[event(next, "turn/start", serde_json::json!({"turn": 2}))],
    )
    .await
    .unwrap();
    new.flush(&hd.id).await.unwrap();
    // The old holder wakes up and writes: refused, never interleaved.
    old.append(
        &hd.id,
        &[event(
            2,
            "step/end",
            serde_json::json!({"turn": 1, "step": 1}),
        )],
    )
    .await
    .unwrap();
    let late = old.flush(&hd.id).await.unwrap_err();
    assert!(late.to_string().contains("lease was taken over"), "{late}");
    assert!(late.to_string().contains("rescuer"), "{late}");
    new.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let stored = new.inspect(&hd.id, &known).await.unwrap();
    // The new holder's turn is there, and nothing of the old holder's: the one closer is
    // inspect's own, closing the new holder's open turn.
    assert_eq!(stored.events[next as usize].kind.as_str(), "turn/start");
    assert_eq!(stored.repair.closers, 1);
    assert_eq!(stored.events.len() as u64, next + 2);
}
