//! JSONL-specific rules: configuration, layout and modes, locks between writers, write-behind,
//! and failure injection through `FsOps`.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use dsh_session::repair::interrupted_turn_closers;
use dsh_session::{
    CloseIntent, EventType, EventVocabulary, Origin, PersistenceError, SessionEvent,
    SessionPersistence,
};
use dsh_session_jsonl::{FsOps, JsonlConfig, JsonlPersistence};
use serde_json::value::RawValue;

use crate::contract::log_path;

pub(crate) use dsh_test_providers::session_fixtures::header_for as header;

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

/// Counts calls, fails the next N of each kind on request, and can stall the next write.
#[derive(Default)]
struct Faults {
    writes: AtomicU32,
    stall_next_write: std::sync::atomic::AtomicBool,
    stalled: std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
    fail_write: AtomicU32,
    fail_sync_data: AtomicU32,
    panic_sync_data: AtomicU32,
    fail_set_len: AtomicU32,
    fail_link: AtomicU32,
    fail_sync_dir: AtomicU32,
    synced_dirs: std::sync::Mutex<Vec<std::path::PathBuf>>,
}

fn take(counter: &AtomicU32) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

impl FsOps for Faults {
    fn write(&self, file: &std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        if self.stall_next_write.swap(false, Ordering::SeqCst) {
            if let Some(tx) = self.stalled.lock().unwrap().take() {
                tx.send(()).unwrap();
            }
            let release = self.release.lock().unwrap().take();
            if let Some(rx) = release {
                rx.recv().unwrap();
            }
        }
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
        assert!(!take(&self.panic_sync_data), "injected fdatasync panic");
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

    fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        if take(&self.fail_sync_dir) {
            return Err(std::io::Error::other("injected directory fsync failure"));
        }
        self.synced_dirs.lock().unwrap().push(dir.to_path_buf());
        std::fs::File::open(dir)?.sync_all()
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_write_on_one_session_does_not_block_another() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let (stalled_tx, stalled_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel();
    *faults.stalled.lock().unwrap() = Some(stalled_tx);
    *faults.release.lock().unwrap() = Some(release_rx);
    faults.stall_next_write.store(true, Ordering::SeqCst);
    let (a, b) = (header("stalled-a"), header("free-b"));
    for hd in [&a, &b] {
        p.create(hd, Origin::New).await.unwrap();
        p.append(&hd.id, &events(0, 2)).await.unwrap();
    }
    let pa = p.clone();
    let id = a.id.clone();
    let flush_a = tokio::spawn(async move { pa.flush(&id).await });
    tokio::task::spawn_blocking(move || stalled_rx.recv().unwrap())
        .await
        .unwrap();
    p.flush(&b.id).await.unwrap();
    assert!(
        !flush_a.is_finished(),
        "A is still stalled while B completed"
    );
    release_tx.send(()).unwrap();
    flush_a.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_fifteen_mib_event_round_trips_and_an_over_long_line_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("huge");
    let big = Arc::new(SessionEvent {
        seq: 0,
        kind: EventType::new("user/message").unwrap(),
        time: 5,
        ignorable: false,
        data: RawValue::from_string(serde_json::to_string(&"z".repeat(15 * 1024 * 1024)).unwrap())
            .unwrap(),
    });
    let end = Arc::new(SessionEvent {
        seq: 1,
        kind: EventType::new("turn/end").unwrap(),
        time: 5,
        ignorable: false,
        data: RawValue::from_string(r#"{"turn":1,"reason":{"kind":"completed"}}"#.into()).unwrap(),
    });
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &[big.clone(), end]).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
    assert_eq!(loaded.events[0].encode(), big.encode());

    // Replace the big line with one over 16 MiB: damage before the last turn/end.
    let path = log_path(dir.path(), &hd.id).unwrap();
    let text = std::fs::read(&path).unwrap();
    let mut lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let huge = vec![b'a'; 17 * 1024 * 1024];
    lines[1] = &huge;
    std::fs::write(&path, lines.join(&b'\n')).unwrap();
    let before = std::fs::read(&path).unwrap();
    match p.load(&hd.id, &EventVocabulary::new()).await {
        Err(PersistenceError::Corrupt { line: Some(2), .. }) => {}
        other => panic!("expected Corrupt at line 2, got {other:?}"),
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was not modified"
    );
}

/// Truncate at every byte offset inside the last three records, then add NUL blocks.
#[tokio::test]
async fn power_loss_at_every_offset_of_the_tail_never_loses_committed_history() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("power");
    let mut all = Vec::new();
    for turn in 1..=2u64 {
        for (kind, data) in [
            ("turn/start", format!(r#"{{"turn":{turn}}}"#)),
            (
                "user/message",
                format!(r#"{{"turn":{turn},"step":1,"message":{{"content":"hi"}}}}"#),
            ),
            (
                "turn/end",
                format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
            ),
        ] {
            all.push(Arc::new(SessionEvent {
                seq: all.len() as u64,
                kind: EventType::new(kind).unwrap(),
                time: 7,
                ignorable: false,
                data: RawValue::from_string(data).unwrap(),
            }));
        }
    }
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &all).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let path = log_path(dir.path(), &hd.id).unwrap();
    let original = std::fs::read(&path).unwrap();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            original
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    // Records 5..7 (the last three events: turn 2) start at line_starts[4].
    let tail_start = line_starts[4];
    for cut in tail_start..original.len() {
        let mut damaged = original[..cut].to_vec();
        damaged.extend_from_slice(&[0u8; 512]);
        std::fs::write(&path, &damaged).unwrap();
        let loaded = p
            .load(&hd.id, &EventVocabulary::new())
            .await
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        // Everything up to turn 1's turn/end (seq 2) is always there, byte for byte.
        for (got, want) in loaded.events.iter().zip(&all).take(3) {
            assert_eq!(got.encode(), want.encode(), "cut at {cut}");
        }
        assert!(
            interrupted_turn_closers(&loaded.events).is_empty(),
            "cut at {cut}: balanced"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_dropped_while_its_write_is_in_progress_loses_nothing() {
    for materialized in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (p, faults) = faulty(dir.path());
        let h = header("dropped-flush");
        p.create(&h, Origin::New).await.unwrap();
        let mut next = 0;
        if materialized {
            p.append(&h.id, &events(0, 2)).await.unwrap();
            p.flush(&h.id).await.unwrap();
            next = 2;
        }
        p.append(&h.id, &events(next, 3)).await.unwrap();
        let (stalled_tx, stalled_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel();
        *faults.stalled.lock().unwrap() = Some(stalled_tx);
        *faults.release.lock().unwrap() = Some(release_rx);
        faults.stall_next_write.store(true, Ordering::SeqCst);
        {
            // A caller that gives up on its barrier, as a cancelled turn does.
            let flush = p.flush(&h.id);
            tokio::pin!(flush);
            tokio::select! {
                _ = &mut flush => panic!("the write should be stalled"),
                _ = tokio::task::spawn_blocking(move || stalled_rx.recv().unwrap()) => {}
            }
        }
        p.append(&h.id, &events(next + 3, 2)).await.unwrap();
        release_tx.send(()).unwrap();
        p.flush(&h.id).await.unwrap();
        p.close(&h.id, CloseIntent::Flush).await.unwrap();
        let loaded = p.inspect(&h.id, &EventVocabulary::new()).await.unwrap();
        let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
        assert_eq!(
            seqs,
            (0..next + 5).collect::<Vec<_>>(),
            "materialized first: {materialized}"
        );
    }
}

#[tokio::test]
async fn a_failed_directory_fsync_after_publishing_fails_the_barrier_and_the_next_retries() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let hd = header("dirsync");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 2)).await.unwrap();
    // Another session of the same project makes the directories exist, so the only
    // directory sync left is the one after the publishing link.
    let warm = header("warm");
    p.create(&warm, Origin::New).await.unwrap();
    p.append(&warm.id, &events(0, 1)).await.unwrap();
    p.flush(&warm.id).await.unwrap();
    faults.fail_sync_dir.store(1, Ordering::SeqCst);
    assert!(
        matches!(p.flush(&hd.id).await, Err(PersistenceError::Io { op, .. }) if op.contains("directory")),
        "a barrier without a durable directory entry must fail"
    );
    let synced = faults.synced_dirs.lock().unwrap().len();
    p.append(&hd.id, &events(2, 1)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    assert!(
        faults.synced_dirs.lock().unwrap().len() > synced,
        "the next barrier synced the directory"
    );
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
    let seqs: Vec<u64> = loaded.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2], "no event lost or duplicated");
}

#[tokio::test]
async fn every_directory_created_has_its_parent_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("a/b/c");
    let faults = Arc::new(Faults::default());
    let p = JsonlPersistence::with_fs(JsonlConfig::new(&root), faults.clone()).unwrap();
    let hd = header("nested");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 1)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    let synced = faults.synced_dirs.lock().unwrap().clone();
    let project = log_path(&root, &hd.id)
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    for parent in [
        dir.path().to_path_buf(),
        dir.path().join("a"),
        dir.path().join("a/b"),
        root.clone(),
        project,
    ] {
        assert!(
            synced.contains(&parent),
            "{} was not fsynced: {synced:?}",
            parent.display()
        );
    }
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
}

#[tokio::test]
async fn a_far_future_mtime_saturates_in_the_listing() {
    // ext4 clamps timestamps to 2446; tmpfs keeps 64-bit seconds, which is what overflowed.
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        return;
    };
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("future");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 1)).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let path = log_path(dir.path(), &hd.id).unwrap();
    let far = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1 << 60);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(far)
        .unwrap();
    if std::fs::metadata(&path).unwrap().modified().unwrap() != far {
        return;
    }
    let listed = p.list(&Default::default()).await.unwrap();
    assert_eq!(listed.sessions[0].updated_at, i64::MAX);
}

#[tokio::test]
async fn an_unreadable_root_is_an_error_and_a_skipped_entry_never_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(&root)).unwrap();
    // Replaced by a file after construction: reading it fails with ENOTDIR, which is an
    // I/O error to report (root ignores permission bits, so EACCES cannot be staged here).
    std::fs::remove_dir(&root).unwrap();
    std::fs::write(&root, "not a directory").unwrap();
    let hd = header("blocked");
    assert!(matches!(
        p.create(&hd, Origin::New).await,
        Err(PersistenceError::Io { .. })
    ));
    let listed = p.list(&Default::default()).await.unwrap();
    assert!(listed.sessions.is_empty());
    assert_eq!(listed.skipped.len(), 1);
    assert!(
        listed.skipped[0]
            .reason
            .starts_with("cannot read the directory"),
        "{:?}",
        listed.skipped
    );
}

#[tokio::test]
async fn a_project_directory_without_read_permission_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    if effective_uid_is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("locked");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 1)).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let project = log_path(dir.path(), &hd.id)
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o000)).unwrap();
    let listed = p.list(&Default::default()).await.unwrap();
    let created = p.create(&hd, Origin::New).await;
    std::fs::set_permissions(&project, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(
        listed
            .skipped
            .iter()
            .any(|s| s.reason.starts_with("cannot read the directory"))
    );
    assert!(
        matches!(created, Err(PersistenceError::Io { .. })),
        "an existence check that cannot look is an error"
    );
}

fn effective_uid_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

#[tokio::test]
async fn a_turn_start_without_a_u32_turn_is_refused_with_its_line_instead_of_loading_unresumable() {
    for bad in ["-1", "\"3\"", "4294967296", "null"] {
        let dir = tempfile::tempdir().unwrap();
        let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
        let hd = header("badturn");
        p.create(&hd, Origin::New).await.unwrap();
        let mut evs = events(0, 1);
        evs.push(Arc::new(SessionEvent {
            seq: 1,
            kind: EventType::new("turn/start").unwrap(),
            time: 2_000,
            ignorable: false,
            data: RawValue::from_string(format!("{{\"turn\":{bad}}}")).unwrap(),
        }));
        p.append(&hd.id, &evs).await.unwrap();
        p.close(&hd.id, CloseIntent::Flush).await.unwrap();
        let before = std::fs::read(log_path(dir.path(), &hd.id).unwrap()).unwrap();
        match p.load(&hd.id, &EventVocabulary::new()).await {
            Err(PersistenceError::Corrupt { line, reason, .. }) => {
                assert_eq!(line, Some(3), "{bad}");
                assert!(reason.contains("turn/start"), "{reason}");
            }
            other => panic!("{bad}: expected Corrupt, got {other:?}"),
        }
        let after = std::fs::read(log_path(dir.path(), &hd.id).unwrap()).unwrap();
        assert_eq!(before, after, "nothing stored is touched");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_racing_close_is_refused_or_kept_never_silently_dropped() {
    for round in 0..200 {
        let dir = tempfile::tempdir().unwrap();
        let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
        let hd = header("race");
        p.create(&hd, Origin::New).await.unwrap();
        p.append(&hd.id, &events(0, 10)).await.unwrap();
        let appender = {
            let (p, id) = (p.clone(), hd.id.clone());
            tokio::spawn(async move {
                let mut accepted = 10u64;
                for seq in 10..400 {
                    if p.append(&id, &events(seq, 1)).await.is_err() {
                        break;
                    }
                    accepted = seq + 1;
                    tokio::task::yield_now().await;
                }
                accepted
            })
        };
        tokio::task::yield_now().await;
        p.close(&hd.id, CloseIntent::Flush).await.unwrap();
        let accepted = appender.await.unwrap();
        let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
        assert_eq!(
            loaded.events.len() as u64,
            accepted,
            "round {round}: every accepted event is on disk"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_task_that_panics_is_a_task_failure_not_an_io_or_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let (p, faults) = faulty(dir.path());
    let hd = header("panicky");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 1)).await.unwrap();
    p.flush(&hd.id).await.unwrap();
    p.append(&hd.id, &events(1, 1)).await.unwrap();
    faults.panic_sync_data.store(1, Ordering::SeqCst);
    let err = p.flush(&hd.id).await.unwrap_err();
    assert!(
        matches!(
            &err,
            PersistenceError::TaskFailed { id: Some(id), op: "write", panicked: true } if *id == hd.id
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("session {}: write did not finish: its task panicked", hd.id)
    );
}

#[tokio::test]
async fn listing_a_relative_directory_is_an_invalid_query() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let query = dsh_session::ListQuery {
        cwd: Some("relative/dir".into()),
        project: None,
    };
    let err = p.list(&query).await.unwrap_err();
    assert!(
        matches!(err, PersistenceError::InvalidQuery { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("invalid listing query: "),
        "{err}"
    );
}

#[tokio::test]
async fn a_title_alone_is_not_activity_and_keeps_the_time_of_last_change() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = header("renamed-later");
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &events(0, 2)).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    // The conversation happened an hour ago.
    let path = log_path(dir.path(), &hd.id).unwrap();
    let then = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .append(true)
        .open(&path)
        .unwrap()
        .set_modified(then)
        .unwrap();
    let listed = |p: Arc<JsonlPersistence>| async move {
        let listing = p.list(&dsh_session::ListQuery::default()).await.unwrap();
        listing.sessions[0].updated_at
    };
    let before = listed(p.clone()).await;

    let append = |seq: u64, kind: &str, data: &str| {
        Arc::new(SessionEvent {
            seq,
            kind: EventType::new(kind).unwrap(),
            time: 5_000,
            ignorable: true,
            data: RawValue::from_string(data.to_owned()).unwrap(),
        })
    };
    let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
    let resume = Origin::Resume {
        next_seq: 2,
        revision: loaded.revision,
    };
    p.create(&hd, resume).await.unwrap();
    let title = append(
        2,
        "session/title",
        r#"{"title":"new name","source":"rename"}"#,
    );
    p.append(&hd.id, &[title]).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    assert_eq!(listed(p.clone()).await, before, "a rename is not activity");

    let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
    let resume = Origin::Resume {
        next_seq: 3,
        revision: loaded.revision,
    };
    p.create(&hd, resume).await.unwrap();
    p.append(&hd.id, &events(3, 1)).await.unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    assert!(listed(p.clone()).await > before, "a message is");
}
