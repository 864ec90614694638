//! JSONL-specific rules: configuration, layout and modes, locks between writers, write-behind,
//! and failure injection through `FsOps`.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use dsh_session::{
    CloseIntent, EventType, EventVocabulary, Origin, PersistenceError, SessionEvent, SessionHeader,
    SessionId, SessionPersistence,
};
use dsh_session_jsonl::{FsOps, JsonlConfig, JsonlPersistence};
use serde_json::value::RawValue;

use crate::contract::log_path;

fn header(id: &str) -> SessionHeader {
    SessionHeader {
        version: 1,
        id: SessionId::parse(id).unwrap(),
        created_at: 1_767_225_600_000,
        cwd: "/home/ana/src/app".into(),
        parent: None,
        seed_len: None,
    }
}

fn events(from: u64, n: u64) -> Vec<Arc<SessionEvent>> {
    (from..from + n)
        .map(|seq| {
            Arc::new(SessionEvent {
                seq,
                kind: EventType::new("user/message").unwrap(),
                time: 1_000 + seq as i64,
                ignorable: false,
                data: RawValue::from_string(format!("{{\"n\":{seq}}}")).unwrap(),
            })
        })
        .collect()
}

/// Counts calls and fails the next N of each kind on request.
#[derive(Default)]
struct Faults {
    writes: AtomicU32,
    fail_write: AtomicU32,
    fail_sync_data: AtomicU32,
    fail_set_len: AtomicU32,
    fail_link: AtomicU32,
}

fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

impl FsOps for Faults {
    fn write(&self, file: &std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        if take(&self.fail_write) {
            // A partial write, then the error: the rollback must remove it.
            let mut f = file;
            std::io::Write::write_all(&mut f, &bytes[..bytes.len() / 2])?;
            return Err(std::io::Error::other("injected write failure"));
        }
        let mut f = file;
        std::io::Write::write_all(&mut f, bytes)
    }

    fn sync_data(&self, file: &std::fs::File) -> std::io::Result<()> {
        if take(&self.fail_sync_data) {
            return Err(std::io::Error::other("injected fdatasync failure"));
        }
        file.sync_data()
    }

    fn set_len(&self, file: &std::fs::File, len: u64) -> std::io::Result<()> {
        if take(&self.fail_set_len) {
            return Err(std::io::Error::other("injected truncate failure"));
        }
        file.set_len(len)
    }

    fn hard_link(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        if take(&self.fail_link) {
            return Err(std::io::Error::other("injected link failure"));
        }
        std::fs::hard_link(from, to)
    }
}

fn faulty(dir: &std::path::Path) -> (Arc<JsonlPersistence>, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let p = JsonlPersistence::with_fs(JsonlConfig::new(dir), faults.clone()).unwrap();
    (p, faults)
}

#[test]
fn configuration_is_checked_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let config_error = |config: JsonlConfig| {
        matches!(
            JsonlPersistence::new(config),
            Err(PersistenceError::Config { .. })
        )
    };
    assert!(config_error(JsonlConfig::new(&file)));
    let mut slow = JsonlConfig::new(dir.path().join("a"));
    slow.write_window = Duration::from_secs(61);
    assert!(config_error(slow));
    let mut small = JsonlConfig::new(dir.path().join("a"));
    small.batch_max_bytes = 1024;
    assert!(config_error(small));
    let missing = dir.path().join("not-yet");
    JsonlPersistence::new(JsonlConfig::new(&missing)).unwrap();
    assert!(!missing.exists());
}

#[tokio::test]
async fn layout_modes_and_header_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("layout");
    p.create(&hd, Origin::New).await.unwrap();
    let before = p.locate(&hd.id).await.unwrap().unwrap();
    p.append(&hd.id, &events(0, 2)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    let path = log_path(dir.path(), &hd.id).unwrap();
    assert_eq!(
        before.path.as_deref(),
        Some(path.as_path()),
        "locate is stable"
    );
    let project = path.parent().unwrap();
    assert!(
        project
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("home-ana-src-app-")
    );
    assert_eq!(
        std::fs::metadata(project).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        r#"{"format":"dsh-session","version":1,"id":"layout","created_at":1767225600000,"cwd":"/home/ana/src/app"}"#
    );
    assert_eq!(
        lines.next().unwrap(),
        r#"{"seq":0,"type":"user/message","time":1000,"data":{"n":0}}"#
    );
    let temps: Vec<_> = std::fs::read_dir(project)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(temps.is_empty(), "the temp name is gone");
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
}

#[tokio::test]
async fn a_second_writer_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let a = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let b = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("locked");
    a.create(&hd, Origin::New).await.unwrap();
    a.append(&hd.id, &events(0, 3)).await.unwrap();
    a.flush(&hd.id).await.unwrap();
    let known = EventVocabulary::new();
    match b.load(&hd.id, &known).await {
        Err(err @ PersistenceError::Locked { .. }) => {
            assert!(
                err.to_string().contains("open in another dsh process"),
                "{err}"
            );
            assert!(err.to_string().contains("locked.jsonl"), "{err}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let seen = b.inspect(&hd.id, &known).await.unwrap();
    assert_eq!(
        seen.events.len(),
        3,
        "inspect sees the durable prefix without the lock"
    );
    let resume = Origin::Resume {
        next_seq: 3,
        revision: seen.revision.clone(),
    };
    assert!(matches!(
        b.create(&hd, resume).await,
        Err(PersistenceError::Locked { .. })
    ));
    assert!(matches!(
        b.create(&hd, Origin::New).await,
        Err(PersistenceError::AlreadyExists { .. })
    ));
    assert!(matches!(
        b.delete(&hd.id).await,
        Err(PersistenceError::Locked { .. })
    ));
    a.close(&hd.id, CloseIntent::Flush).await.unwrap();
    assert_eq!(b.load(&hd.id, &known).await.unwrap().events.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn write_behind_batches_until_the_window_and_flush_shares_it() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let hd = header("window");
    p.create(&hd, Origin::New).await.unwrap();
    for seq in 0..19 {
        p.append(&hd.id, &events(seq, 1)).await.unwrap();
        tokio::time::advance(Duration::from_millis(10)).await;
    }
    assert_eq!(
        faults.writes.load(Ordering::SeqCst),
        0,
        "nothing written inside the window"
    );
    assert!(log_path(dir.path(), &hd.id).is_none());
    p.append(&hd.id, &events(19, 1)).await.unwrap();
    tokio::time::advance(Duration::from_millis(20)).await;
    // The timer fired and started the write; the flush waits for it and finds nothing left.
    p.flush(&hd.id).await.unwrap();
    assert_eq!(
        faults.writes.load(Ordering::SeqCst),
        1,
        "one write for twenty appends"
    );
    p.append(&hd.id, &events(20, 1)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    assert_eq!(
        faults.writes.load(Ordering::SeqCst),
        2,
        "a flush is one write"
    );
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
}

#[tokio::test]
async fn a_failed_write_or_sync_is_rolled_back_and_retried() {
    for fault in ["write", "sync_data"] {
        let dir = tempfile::tempdir().unwrap();
        let (p, faults) = faulty(dir.path());
        let hd = header("retry");
        p.create(&hd, Origin::New).await.unwrap();
        p.append(&hd.id, &events(0, 2)).await.unwrap();
        p.flush(&hd.id).await.unwrap();
        let path = log_path(dir.path(), &hd.id).unwrap();
        let durable = std::fs::metadata(&path).unwrap().len();
        match fault {
            "write" => faults.fail_write.store(1, Ordering::SeqCst),
            _ => faults.fail_sync_data.store(1, Ordering::SeqCst),
        }
        p.append(&hd.id, &events(2, 3)).await.unwrap();
        assert!(
            matches!(p.flush(&hd.id).await, Err(PersistenceError::Io { .. })),
            "{fault}"
        );
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            durable,
            "{fault}: truncated back"
        );
        p.append(&hd.id, &events(5, 1)).await.unwrap();
        p.flush(&hd.id).await.unwrap();
        p.close(&hd.id, CloseIntent::Flush).await.unwrap();
        let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
        let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4, 5], "{fault}: no gap, no duplicate");
    }
}

#[tokio::test]
async fn a_failed_rollback_poisons_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let hd = header("poison");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 1)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    faults.fail_write.store(1, Ordering::SeqCst);
    faults.fail_set_len.store(1, Ordering::SeqCst);
    p.append(&hd.id, &events(1, 1)).await.unwrap();
    assert!(matches!(
        p.flush(&hd.id).await,
        Err(PersistenceError::Poisoned { .. })
    ));
    assert!(
        matches!(
            p.flush(&hd.id).await,
            Err(PersistenceError::Poisoned { .. })
        ),
        "sticky"
    );
    assert!(matches!(
        p.append(&hd.id, &events(2, 1)).await,
        Err(PersistenceError::Poisoned { .. })
    ));
}

#[tokio::test]
async fn a_failed_materialization_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let hd = header("unlinked");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 3)).await.unwrap();
    faults.fail_link.store(1, Ordering::SeqCst);
    assert!(matches!(
        p.flush(&hd.id).await,
        Err(PersistenceError::Io { .. })
    ));
    assert!(log_path(dir.path(), &hd.id).is_none());
    let leftovers: usize = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|d| std::fs::read_dir(d.path()).unwrap().count())
        .sum();
    assert_eq!(leftovers, 0, "the temp file was removed");
    p.flush(&hd.id).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    assert_eq!(
        p.load(&hd.id, &EventVocabulary::new())
            .await
            .unwrap()
            .events
            .len(),
        3
    );
}
