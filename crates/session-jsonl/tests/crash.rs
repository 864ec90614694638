//! Crash injection with real processes. A child (this test binary, re-executed) appends a
//! deterministic mix of events and reports every completed flush on its stdout; the parent
//! SIGKILLs it at a random point, then checks that nothing flushed was lost, the log loads
//! repaired and balanced, and appending continues. `DSH_CRASH_ITERATIONS` raises the count for
//! soak runs.
//!
//! A test binary of its own: forking children while other tests hold session files open would
//! let a child inherit a lock for the instant between fork and exec.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::{Command, Stdio};

use dsh_session::{EventVocabulary, SessionPersistence};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use dsh_test_providers::session_fixtures::{check_loaded, header, kill_at_random, write_reporting};

/// The child: runs only when the parent sets `DSH_CRASH_CHILD=<dir>:<seed>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_writer() {
    let Ok(spec) = std::env::var("DSH_CRASH_CHILD") else {
        return;
    };
    let (dir, seed) = spec.rsplit_once(':').unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir)).unwrap();
    write_reporting(&*p, seed.parse().unwrap(), |line| println!("{line}")).await;
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
    // The OS releases the lock of a killed writer.
    let killed = kill_at_random(&mut child, seed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
        let loaded = match p.load(&header().id, &EventVocabulary::new()).await {
            Ok(loaded) => loaded,
            Err(dsh_session::PersistenceError::NotFound { .. }) if killed.flushed == 0 => {
                return Ok(false);
            }
            Err(err) => return Err(format!("load failed: {err}")),
        };
        check_loaded(&*p, loaded, seed, killed.flushed).await
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
