//! The contract every `SessionPersistence` provider must pass, written against the trait alone. A provider's test calls [`run`] with a
//! [`Harness`] that builds the provider over a storage directory and exposes its stored
//! records, so the suite can damage them.

use std::path::Path;
use std::sync::Arc;

use dsh_session::{
    CloseIntent, EventClass, EventType, EventVocabulary, ListQuery, Origin, PersistenceError,
    SessionEvent, SessionHeader, SessionId, SessionPersistence, TurnEndReason,
};
use serde_json::value::RawValue;

/// What the suite needs from a provider's test.
pub trait Harness: Send + Sync {
    /// A provider over the storage in `dir` (a fresh instance each call; earlier instances
    /// over the same `dir` may still be alive).
    fn provider(&self, dir: &Path) -> Arc<dyn SessionPersistence>;
    /// The stored records of `id`: the header record first, then one per event, each without
    /// its terminator; plus trailing bytes after the last complete record.
    fn records(&self, dir: &Path, id: &SessionId) -> Option<(Vec<Vec<u8>>, Vec<u8>)>;
    /// Replaces the stored log of `id` with these records and trailing bytes.
    fn write_records(&self, dir: &Path, id: &SessionId, records: &[Vec<u8>], trailing: &[u8]);
}

/// Runs every contract test, each in its own storage directory.
pub async fn run(h: &dyn Harness) {
    round_trip(h).await;
    lazy_create(h).await;
    resume(h).await;
    unknown_types(h).await;
    seq_checks(h).await;
    barrier(h).await;
    close_and_load_guards(h).await;
    listing(h).await;
    projects(h).await;
    shutdown(h).await;
    headers(h).await;
    damage_before_last_turn(h).await;
    torn_tail(h).await;
    side_effect_free_reads_and_delete(h).await;
}

fn header(id: &str) -> SessionHeader {
    SessionHeader {
        version: 1,
        id: SessionId::parse(id).expect("valid id"),
        created_at: 1_767_225_600_000,
        cwd: "/home/ana/src/app".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    }
}

fn ev(seq: u64, kind: &str, data: serde_json::Value) -> Arc<SessionEvent> {
    Arc::new(SessionEvent {
        seq,
        kind: EventType::new(kind).expect("valid type"),
        time: 1_767_225_600_100 + seq as i64,
        ignorable: false,
        data: RawValue::from_string(data.to_string()).expect("json"),
    })
}

/// A balanced log of `turns` turns: start, step, message, result, step end, turn end.
fn turns(first_seq: u64, turns: u32) -> Vec<Arc<SessionEvent>> {
    let mut out = Vec::new();
    let mut seq = first_seq;
    let mut push = |kind: &str, data: serde_json::Value| {
        out.push(ev(seq, kind, data));
        seq += 1;
    };
    for t in 1..=turns {
        push("turn/start", serde_json::json!({ "turn": t }));
        push("step/start", serde_json::json!({ "turn": t, "step": 1 }));
        push(
            "user/message",
            serde_json::json!({ "turn": t, "step": 1, "message": { "content": format!("hello {t} \u{1F600}") } }),
        );
        push(
            "assistant/chunk",
            serde_json::json!({ "turn": t, "step": 1, "chunk": { "text": "hi" } }),
        );
        push("step/end", serde_json::json!({ "turn": t, "step": 1 }));
        push(
            "turn/end",
            serde_json::json!({ "turn": t, "reason": { "kind": "completed" } }),
        );
    }
    out
}

fn encoded(events: &[Arc<SessionEvent>]) -> Vec<Vec<u8>> {
    events.iter().map(|e| e.encode()).collect()
}

async fn store(p: &dyn SessionPersistence, h: &SessionHeader, events: &[Arc<SessionEvent>]) {
    p.create(h, Origin::New).await.expect("create");
    for chunk in events.chunks(7) {
        p.append(&h.id, chunk).await.expect("append");
    }
    p.flush(&h.id).await.expect("flush");
    p.close(&h.id, CloseIntent::Flush).await.expect("close");
}

fn known() -> EventVocabulary {
    EventVocabulary::new()
}

/// Header and events come back byte-identical.
async fn round_trip(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("round-trip");
    let events = turns(0, 167);
    store(&*p, &hd, &events).await;
    let loaded = p.load(&hd.id, &known()).await.expect("load");
    assert_eq!(loaded.header, hd);
    assert_eq!(encoded(&loaded.events), encoded(&events));
    assert_eq!(loaded.repair.dropped_records + loaded.repair.closers, 0);
}

/// Nothing stored before the first event; `create(New)` over a stored log is refused.
async fn lazy_create(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("lazy");
    p.create(&hd, Origin::New).await.expect("create");
    p.append(&hd.id, &[]).await.expect("empty append");
    p.flush(&hd.id).await.expect("flush of nothing");
    p.close(&hd.id, CloseIntent::Flush).await.expect("close");
    assert!(h.records(dir.path(), &hd.id).is_none(), "nothing stored");
    assert!(
        p.list(&ListQuery::default())
            .await
            .expect("list")
            .sessions
            .is_empty()
    );
    assert!(matches!(
        p.load(&hd.id, &known()).await,
        Err(PersistenceError::NotFound { .. })
    ));

    store(&*p, &hd, &turns(0, 1)).await;
    let err = p
        .create(&hd, Origin::New)
        .await
        .expect_err("stored log exists");
    assert!(
        matches!(err, PersistenceError::AlreadyExists { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("load or resume"), "{err}");
}

/// Resume continues the seq; a changed log conflicts; an open id is live.
async fn resume(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("resume");
    store(&*p, &hd, &turns(0, 2)).await;
    let loaded = p.load(&hd.id, &known()).await.expect("load");
    let next_seq = loaded.events.len() as u64;
    let origin = Origin::Resume {
        next_seq,
        revision: loaded.revision.clone(),
    };
    p.create(&hd, origin.clone()).await.expect("resume");
    assert!(matches!(
        p.create(&hd, origin.clone()).await,
        Err(PersistenceError::Live { .. })
    ));
    p.append(&hd.id, &turns(next_seq, 1)).await.expect("append");
    p.close(&hd.id, CloseIntent::Flush).await.expect("close");
    let again = p.load(&hd.id, &known()).await.expect("load");
    assert_eq!(again.events.len() as u64, next_seq + 6);
    assert!(
        again
            .events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq == i as u64)
    );
    // The log changed after `loaded`: resuming from the stale revision conflicts.
    assert!(matches!(
        p.create(&hd, origin).await,
        Err(PersistenceError::Conflict { .. })
    ));
}

/// An unknown required type refuses the load and changes nothing; ignorable loads.
async fn unknown_types(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("unknown");
    let mut events = turns(0, 1);
    events.push(ev(6, "future/thing", serde_json::json!({})));
    events.extend(turns(7, 1));
    store(&*p, &hd, &events).await;
    let before = h.records(dir.path(), &hd.id);
    match p.load(&hd.id, &known()).await {
        Err(PersistenceError::UnsupportedEvent { seq, kind, .. }) => {
            assert_eq!((seq, kind.as_str()), (6, "future/thing"));
        }
        other => panic!("expected UnsupportedEvent, got {other:?}"),
    }
    assert_eq!(h.records(dir.path(), &hd.id), before, "storage unchanged");
    let vocabulary = known();
    vocabulary
        .register(
            &EventType::new("future/thing").expect("type"),
            EventClass::Ignorable,
        )
        .expect("register");
    assert!(p.load(&hd.id, &vocabulary).await.is_ok());
}

/// Seq checks refuse the whole batch.
async fn seq_checks(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("seqs");
    p.create(&hd, Origin::New).await.expect("create");
    let e = turns(0, 1);
    for bad in [
        vec![e[1].clone()],
        vec![e[0].clone(), e[2].clone()],
        vec![e[0].clone(), e[0].clone()],
    ] {
        assert!(matches!(
            p.append(&hd.id, &bad).await,
            Err(PersistenceError::SeqMismatch { .. })
        ));
    }
    p.flush(&hd.id).await.expect("flush");
    assert!(h.records(dir.path(), &hd.id).is_none(), "nothing stored");
    let stranger = SessionId::parse("stranger").expect("id");
    assert!(matches!(
        p.append(&stranger, &e).await,
        Err(PersistenceError::NotOpen { .. })
    ));
}

/// After `flush`, a fresh instance loads every accepted event.
async fn barrier(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("barrier");
    let events = turns(0, 3);
    p.create(&hd, Origin::New).await.expect("create");
    p.append(&hd.id, &events).await.expect("append");
    p.flush(&hd.id).await.expect("flush");
    let fresh = h.provider(dir.path());
    let seen = fresh.inspect(&hd.id, &known()).await.expect("inspect");
    assert_eq!(encoded(&seen.events), encoded(&events));
    p.close(&hd.id, CloseIntent::Flush).await.expect("close");
}

/// Abandon leaves nothing; load guards.
async fn close_and_load_guards(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("abandon");
    p.create(&hd, Origin::New).await.expect("create");
    p.append(&hd.id, &turns(0, 1)).await.expect("append");
    assert!(matches!(
        p.load(&hd.id, &known()).await,
        Err(PersistenceError::Live { .. })
    ));
    p.close(&hd.id, CloseIntent::Abandon)
        .await
        .expect("abandon");
    assert!(h.records(dir.path(), &hd.id).is_none());
    p.close(&hd.id, CloseIntent::Flush)
        .await
        .expect("closing a closed id is Ok");
    assert!(matches!(
        p.load(&hd.id, &known()).await,
        Err(PersistenceError::NotFound { .. })
    ));
}

/// Newest first, headers only, cwd filter, unreadable headers skipped.
async fn listing(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    for i in 0..20 {
        let mut hd = header(&format!("list-{i:02}"));
        if i % 2 == 1 {
            hd.cwd = "/other".into();
        }
        store(&*p, &hd, &turns(0, 1)).await;
    }
    let all = p.list(&ListQuery::default()).await.expect("list");
    assert_eq!(all.sessions.len(), 20);
    assert!(
        all.sessions
            .windows(2)
            .all(|w| w[0].updated_at >= w[1].updated_at)
    );
    let other = p
        .list(&ListQuery {
            cwd: Some("/other/".into()),
            project: None,
        })
        .await
        .expect("list");
    assert_eq!(other.sessions.len(), 10);
    assert!(other.sessions.iter().all(|s| s.header.cwd == "/other"));
    let broken = SessionId::parse("list-00").expect("id");
    h.write_records(dir.path(), &broken, &[b"{not a header".to_vec()], b"");
    let again = p.list(&ListQuery::default()).await.expect("list");
    assert_eq!(again.sessions.len(), 19);
    assert_eq!(again.skipped.len(), 1);
}

/// A listing by project finds a session started in another clone of the same repository,
/// and nothing of another project.
async fn projects(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let repos = tempfile::tempdir().expect("tempdir");
    for clone in ["one", "two"] {
        let git = repos.path().join(clone).join(".git");
        std::fs::create_dir_all(&git).expect("clone");
        std::fs::create_dir_all(repos.path().join(clone).join("src")).expect("src");
        std::fs::write(
            git.join("config"),
            "[remote \"origin\"]\n\turl = git@example.org:team/app.git\n",
        )
        .expect("config");
    }
    let mut mine = header("in-clone-one");
    mine.cwd = repos.path().join("one/src").display().to_string();
    store(&*p, &mine, &turns(0, 1)).await;
    let mut other = header("elsewhere");
    other.cwd = "/elsewhere".into();
    store(&*p, &other, &turns(0, 1)).await;
    let query = ListQuery {
        cwd: None,
        project: Some(dsh_session::project_of(&repos.path().join("two/src"))),
    };
    let found = p.list(&query).await.expect("list");
    let ids: Vec<&str> = found
        .sessions
        .iter()
        .map(|s| s.header.id.as_str())
        .collect();
    assert_eq!(ids, ["in-clone-one"]);
}

/// Shutdown flushes open sessions; afterwards every call is `Closed`.
async fn shutdown(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("shutdown");
    p.create(&hd, Origin::New).await.expect("create");
    p.append(&hd.id, &turns(0, 1)).await.expect("append");
    p.shutdown().await.expect("shutdown");
    assert!(matches!(
        p.flush(&hd.id).await,
        Err(PersistenceError::Closed)
    ));
    assert!(matches!(
        p.list(&ListQuery::default()).await,
        Err(PersistenceError::Closed)
    ));
    let fresh = h.provider(dir.path());
    assert_eq!(
        fresh
            .load(&hd.id, &known())
            .await
            .expect("load")
            .events
            .len(),
        6
    );
}

/// Version, id and shape of the header.
async fn headers(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("headers");
    store(&*p, &hd, &turns(0, 1)).await;
    let (records, trailing) = h.records(dir.path(), &hd.id).expect("stored");
    let header_text = String::from_utf8(records[0].clone()).expect("utf8");
    for (version, newer) in [("2", true), ("0", false)] {
        let mut altered = records.clone();
        altered[0] = header_text
            .replace("\"version\":1", &format!("\"version\":{version}"))
            .into_bytes();
        h.write_records(dir.path(), &hd.id, &altered, &trailing);
        let err = p.load(&hd.id, &known()).await.expect_err("version");
        assert!(
            matches!(err, PersistenceError::UnsupportedVersion { .. }),
            "{err}"
        );
        assert_eq!(err.to_string().contains("newer dsh"), newer, "{err}");
    }
    let mut altered = records.clone();
    altered[0] = b"{\"format\":\"dsh-session\",".to_vec();
    h.write_records(dir.path(), &hd.id, &altered, &trailing);
    match p.load(&hd.id, &known()).await {
        Err(PersistenceError::Corrupt { line: Some(1), .. }) => {}
        other => panic!("expected Corrupt at line 1, got {other:?}"),
    }
    let mut altered = records;
    altered[0] = header_text
        .replace("\"id\":\"headers\"", "\"id\":\"someone-else\"")
        .into_bytes();
    h.write_records(dir.path(), &hd.id, &altered, &trailing);
    assert!(matches!(
        p.load(&hd.id, &known()).await,
        Err(PersistenceError::IdMismatch { .. })
    ));
}

/// Damage before the last `turn/end` refuses the load and changes nothing.
async fn damage_before_last_turn(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("damaged");
    store(&*p, &hd, &turns(0, 3)).await;
    let (records, trailing) = h.records(dir.path(), &hd.id).expect("stored");
    type Damage = Box<dyn Fn(&[u8]) -> Vec<u8>>;
    let damages: [(&str, Damage); 5] = [
        ("invalid JSON", Box::new(|_| b"{nope".to_vec())),
        (
            "not UTF-8",
            Box::new(|r| {
                let mut r = r.to_vec();
                r[20] = 0xff;
                r
            }),
        ),
        (
            "seq gap",
            Box::new(|r| {
                String::from_utf8_lossy(r)
                    .replacen("\"seq\":4", "\"seq\":40", 1)
                    .into_bytes()
            }),
        ),
        (
            "duplicate seq",
            Box::new(|r| {
                String::from_utf8_lossy(r)
                    .replacen("\"seq\":4", "\"seq\":3", 1)
                    .into_bytes()
            }),
        ),
        (
            "unknown key",
            Box::new(|r| {
                String::from_utf8_lossy(r)
                    .replacen("{\"seq\"", "{\"x\":1,\"seq\"", 1)
                    .into_bytes()
            }),
        ),
    ];
    for (what, damage) in damages {
        let mut altered = records.clone();
        altered[5] = damage(&records[5]);
        h.write_records(dir.path(), &hd.id, &altered, &trailing);
        let before = h.records(dir.path(), &hd.id);
        match p.load(&hd.id, &known()).await {
            Err(err @ PersistenceError::Corrupt { line: Some(6), .. }) => {
                assert!(
                    err.to_string().contains("the file was not modified"),
                    "{err}"
                );
            }
            other => panic!("{what}: expected Corrupt at line 6, got {other:?}"),
        }
        assert_eq!(
            h.records(dir.path(), &hd.id),
            before,
            "{what}: storage unchanged"
        );
    }
}

/// A torn tail is dropped, closers close the open turn, a second load
/// changes nothing, and appending continues.
async fn torn_tail(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let hd = header("torn");
    let mut events = turns(0, 1);
    events.push(ev(6, "turn/start", serde_json::json!({ "turn": 2 })));
    events.push(ev(
        7,
        "step/start",
        serde_json::json!({ "turn": 2, "step": 1 }),
    ));
    store(&*p, &hd, &events).await;
    let (records, _) = h.records(dir.path(), &hd.id).expect("stored");
    // The last record is cut mid-line, and NUL bytes follow (a power loss).
    let mut cut = records.clone();
    let last = cut.pop().expect("record");
    let mut trailing = last[..last.len() / 2].to_vec();
    trailing.extend_from_slice(&[0u8; 64]);
    h.write_records(dir.path(), &hd.id, &cut, &trailing);
    let loaded = p.load(&hd.id, &known()).await.expect("repairing load");
    assert_eq!(loaded.repair.dropped_records, 1);
    assert_eq!(loaded.repair.dropped_bytes, trailing.len() as u64);
    assert_eq!(loaded.repair.first_dropped, Some(9));
    assert_eq!(loaded.repair.closers, 1, "turn 2 is closed as interrupted");
    let last = loaded.events.last().expect("closer");
    let end: dsh_session::TurnEnd = serde_json::from_str(last.data.get()).expect("turn end");
    assert_eq!(end.reason, TurnEndReason::Interrupted);
    assert_eq!(
        encoded(&loaded.events[..7]),
        encoded(&events[..7]),
        "committed prefix intact"
    );
    let again = p.load(&hd.id, &known()).await.expect("second load");
    assert_eq!(encoded(&again.events), encoded(&loaded.events));
    assert_eq!(again.repair.dropped_records + again.repair.closers, 0);
    let next = again.events.len() as u64;
    p.create(
        &hd,
        Origin::Resume {
            next_seq: next,
            revision: again.revision.clone(),
        },
    )
    .await
    .expect("resume");
    p.append(&hd.id, &turns(next, 1)).await.expect("append");
    p.close(&hd.id, CloseIntent::Flush).await.expect("close");
    assert_eq!(
        p.load(&hd.id, &known()).await.expect("load").events.len() as u64,
        next + 6
    );
}

/// `header` and `inspect` write nothing; delete guards.
async fn side_effect_free_reads_and_delete(h: &dyn Harness) {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = h.provider(dir.path());
    let absent = SessionId::parse("absent").expect("id");
    assert!(p.header(&absent).await.expect("header").is_none());
    assert!(matches!(
        p.delete(&absent).await,
        Err(PersistenceError::NotFound { .. })
    ));
    let hd = header("inspected");
    let mut events = turns(0, 1);
    events.push(ev(6, "turn/start", serde_json::json!({ "turn": 2 })));
    store(&*p, &hd, &events).await;
    let before = h.records(dir.path(), &hd.id);
    let seen = p.inspect(&hd.id, &known()).await.expect("inspect");
    assert_eq!(seen.repair.closers, 1);
    assert_eq!(
        h.records(dir.path(), &hd.id),
        before,
        "inspect wrote nothing"
    );
    assert_eq!(p.header(&hd.id).await.expect("header"), Some(hd.clone()));
    p.create(
        &hd,
        Origin::Resume {
            next_seq: 7,
            revision: seen.revision.clone(),
        },
    )
    .await
    .expect("resume");
    assert!(matches!(
        p.delete(&hd.id).await,
        Err(PersistenceError::Live { .. })
    ));
    p.close(&hd.id, CloseIntent::Flush).await.expect("close");
    p.delete(&hd.id).await.expect("delete");
    assert!(matches!(
        p.load(&hd.id, &known()).await,
        Err(PersistenceError::NotFound { .. })
    ));
    assert!(
        p.list(&ListQuery::default())
            .await
            .expect("list")
            .sessions
            .is_empty()
    );
}
