//! The database going away under an open session: a server of the test's own, stopped
//! (cutting every connection) while a session is open, then started again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_session::{CloseIntent, EventVocabulary, Origin, PersistenceError, SessionPersistence};
use dsh_session_postgres::{PostgresConfig, PostgresPersistence};
use dsh_test_providers::session_fixtures::{event, header_for};
use dsh_test_support::postgres::{Cluster, binaries};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_fails_a_flush_clearly_loses_nothing_and_the_session_goes_on() {
    if binaries().is_none() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "CI=true, but no PostgreSQL binaries to start a server with"
        );
        eprintln!("skipped: no PostgreSQL binaries");
        return;
    }
    let mut cluster = Cluster::start();
    let p = PostgresPersistence::connect(PostgresConfig::new(cluster.url()))
        .await
        .unwrap();
    let hd = header_for("through-a-restart");
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
    p.flush(&hd.id).await.unwrap();
    cluster.stop();
    p.append(
        &hd.id,
        &[event(
            2,
            "step/end",
            serde_json::json!({"turn": 1, "step": 1}),
        )],
    )
    .await
    .unwrap();
    let failed = p.flush(&hd.id).await.unwrap_err();
    assert!(matches!(failed, PersistenceError::Io { .. }), "{failed}");
    let said = failed.to_string();
    assert!(
        said.contains("storing the session's events failed"),
        "{said}"
    );
    assert!(
        said.contains("postgres://dsh@"),
        "names the database: {said}"
    );
    // Back: what was accepted meanwhile is stored once, and the session goes on.
    cluster.start_again();
    p.flush(&hd.id).await.unwrap();
    p.append(
        &hd.id,
        &[event(
            3,
            "turn/end",
            serde_json::json!({"turn": 1, "reason": {"kind": "completed"}}),
        )],
    )
    .await
    .unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let stored = p.inspect(&hd.id, &EventVocabulary::new()).await.unwrap();
    let kinds: Vec<&str> = stored.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["turn/start", "step/start", "step/end", "turn/end"]);
    assert_eq!(stored.repair.closers + stored.repair.dropped_records, 0);
}
