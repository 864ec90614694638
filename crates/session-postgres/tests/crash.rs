//! Crash injection with real processes against a real PostgreSQL. A child (this test binary,
//! re-executed) appends a deterministic mix of events and reports every acknowledged flush
//! on its stdout; the parent SIGKILLs it at a random point (at a flush, or while it appends
//! and writes behind), lets the dead writer's lease lapse, loads the session (taking it over
//! and repairing it), and checks that nothing acknowledged was lost, nothing is there twice,
//! and appending continues. `DSH_CRASH_ITERATIONS` raises the count for soak runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::{Command, Stdio};
use std::sync::Arc;

use dsh_session::{EventVocabulary, PersistenceError, SessionPersistence};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};
use dsh_test_providers::postgres::expire_leases;
use dsh_test_providers::session_fixtures::{check_loaded, header, kill_at_random, write_reporting};

async fn provider(url: &str, schema: &str) -> Arc<PostgresPersistence> {
    let mut config = PostgresConfig::new(url);
    config.schema = schema.into();
    PostgresPersistence::connect(config).await.unwrap()
}

/// The child: runs only when the parent sets `DSH_CRASH_CHILD=<schema>:<seed>` (and
/// `DSH_CRASH_URL`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_writer() {
    let (Ok(spec), Ok(url)) = (
        std::env::var("DSH_CRASH_CHILD"),
        std::env::var("DSH_CRASH_URL"),
    ) else {
        return;
    };
    let (schema, seed) = spec.rsplit_once(':').unwrap();
    let p = provider(&url, schema).await;
    write_reporting(&*p, seed.parse().unwrap(), |line| println!("{line}")).await;
}

/// One kill-and-check; `Ok(true)` when the load had something to repair.
async fn iteration(url: &str, seed: u64) -> Result<bool, String> {
    let schema = format!("crash_{}_{seed}", std::process::id());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env("DSH_CRASH_CHILD", format!("{schema}:{seed}"))
        .env("DSH_CRASH_URL", url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let killed = kill_at_random(&mut child, seed);
    if killed.flushed == 0 {
        return Ok(false);
    }
    let p = provider(url, &schema).await;
    let known = EventVocabulary::new();
    // A killed writer's lease holds until it lapses (one that finished gave it up).
    match p.load(&header().id, &known).await {
        Err(PersistenceError::Locked { .. }) if !killed.finished => {}
        Ok(_) if killed.finished => {}
        Ok(_) => return Err("a load took a live lease".into()),
        Err(err) => return Err(format!("load under the lease: {err}")),
    }
    expire_leases(url, &schema).await;
    let loaded = p
        .load(&header().id, &known)
        .await
        .map_err(|e| format!("load failed: {e}"))?;
    check_loaded(&*p, loaded, seed, killed.flushed).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_a_writer_at_random_points_loses_nothing_acknowledged_and_stores_nothing_twice()
{
    if std::env::var("DSH_CRASH_CHILD").is_ok() {
        return;
    }
    let Some(url) = dsh_test_support::postgres::test_url() else {
        return;
    };
    let iterations: u64 = std::env::var("DSH_CRASH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100);
    let mut repaired = 0;
    for seed in 1..=iterations {
        match iteration(&url, seed).await {
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
