//! The listing index: titles come from it, a lost or stale index costs a read of the log and
//! never a session or its title, and a log that changed under its line is read again.

use std::sync::Arc;

use dsh_session::{
    CloseIntent, EventType, ListQuery, Origin, SESSION_TITLE, SessionEvent, SessionId,
    SessionPersistence, TitleRecord, TitleSource,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use serde_json::value::RawValue;

use crate::provider::header;

fn event(seq: u64, kind: &str, data: String) -> Arc<SessionEvent> {
    Arc::new(SessionEvent {
        seq,
        kind: EventType::new(kind).unwrap(),
        time: 1_000 + seq as i64,
        ignorable: kind == SESSION_TITLE,
        data: RawValue::from_string(data).unwrap(),
    })
}

fn title(seq: u64, title: &str, source: TitleSource) -> Arc<SessionEvent> {
    let record = TitleRecord {
        title: title.into(),
        source,
    };
    event(seq, SESSION_TITLE, serde_json::to_string(&record).unwrap())
}

fn prompt(seq: u64, text: &str) -> Arc<SessionEvent> {
    let data = serde_json::json!({"turn": 1, "step": 1, "message": {"id": "m", "text": text,
        "source": {"kind": "user"}}});
    event(seq, "user/message", data.to_string())
}

/// A store in a fresh directory holding session `a`, titled "one".
async fn titled_one() -> (tempfile::TempDir, Arc<JsonlPersistence>) {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let events = vec![prompt(0, "one"), title(1, "one", TitleSource::Prompt)];
    write(&p, "a", events).await;
    (dir, p)
}

async fn write(p: &JsonlPersistence, id: &str, events: Vec<Arc<SessionEvent>>) {
    let header = header(id);
    p.create(&header, Origin::New).await.unwrap();
    p.append(&header.id, &events).await.unwrap();
    p.close(&header.id, CloseIntent::Flush).await.unwrap();
}

async fn titles(p: &JsonlPersistence) -> Vec<(String, Option<String>)> {
    let mut listed: Vec<(String, Option<String>)> = p
        .list(&ListQuery::default())
        .await
        .unwrap()
        .sessions
        .into_iter()
        .map(|s| (s.header.id.to_string(), s.title))
        .collect();
    listed.sort();
    listed
}

fn index_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|d| d.path().join(".index.jsonl"))
        .filter(|p| p.exists())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_are_listed_from_the_index_and_from_the_log_when_the_index_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    // A log of a dsh that wrote no titles and kept no index: named by its first prompt.
    write(&p, "c", vec![prompt(0, "old\nsecond line")]).await;
    for index in index_files(dir.path()) {
        std::fs::remove_file(index).unwrap();
    }
    write(
        &p,
        "a",
        vec![prompt(0, "fix it"), title(1, "fix it", TitleSource::Prompt)],
    )
    .await;
    let renamed = vec![
        prompt(0, "first"),
        title(1, "first", TitleSource::Prompt),
        title(2, "Renamed", TitleSource::Rename),
    ];
    write(&p, "b", renamed).await;
    write(
        &p,
        "d",
        vec![event(0, "turn/start", r#"{"turn":1}"#.into())],
    )
    .await;
    let want = vec![
        ("a".to_owned(), Some("fix it".to_owned())),
        ("b".to_owned(), Some("Renamed".to_owned())),
        ("c".to_owned(), Some("old".to_owned())),
        ("d".to_owned(), None),
    ];
    assert_eq!(titles(&p).await, want);
    // Listed again, now from the index the first listing completed.
    assert_eq!(titles(&p).await, want);
    let indexes = index_files(dir.path());
    assert_eq!(indexes.len(), 1);
    let index = std::fs::read_to_string(&indexes[0]).unwrap();
    assert!(index.contains("\"Renamed\""), "{index}");

    std::fs::remove_file(&indexes[0]).unwrap();
    assert_eq!(titles(&p).await, want, "a lost index costs nothing");
    std::fs::write(&indexes[0], "{not json\n\u{0}\u{1}\n").unwrap();
    assert_eq!(titles(&p).await, want, "a garbled index costs nothing");
    p.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_replaced_or_cut_under_its_line_is_read_again() {
    let (dir, p) = titled_one().await;
    assert_eq!(titles(&p).await, [("a".to_owned(), Some("one".to_owned()))]);
    let log = crate::contract::log_path(dir.path(), &SessionId::parse("a").unwrap()).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    // Written again, shorter and with another title: the old line no longer fits (a
    // file system may give the new file the old inode, but a log never shrinks).
    let replaced = text.replace("\"one\"", "\"2\"");
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, &replaced).unwrap();
    assert_eq!(titles(&p).await, [("a".to_owned(), Some("2".to_owned()))]);
    // Cut short in place (a log only grows): read again, and the broken header reported.
    std::fs::write(&log, "{not a header\n").unwrap();
    let listing = p.list(&ListQuery::default()).await.unwrap();
    assert!(listing.sessions.is_empty());
    assert_eq!(listing.skipped.len(), 1);
    p.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_grown_past_its_logs_is_rewritten_whole() {
    let (dir, p) = titled_one().await;
    let indexes = index_files(dir.path());
    let line = std::fs::read_to_string(&indexes[0]).unwrap();
    std::fs::write(&indexes[0], line.repeat(200)).unwrap();
    assert_eq!(titles(&p).await, [("a".to_owned(), Some("one".to_owned()))]);
    let after = std::fs::read_to_string(&indexes[0]).unwrap();
    assert_eq!(after.lines().count(), 1, "{after}");
    p.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_directory_is_listed_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    // More logs than one thread examines, half of them unknown to the index.
    for i in 0..700 {
        let name = format!("s{i:04}");
        let events = vec![prompt(0, &name), title(1, &name, TitleSource::Prompt)];
        write(&p, &name, events).await;
        if i == 349 {
            for index in index_files(dir.path()) {
                std::fs::remove_file(index).unwrap();
            }
        }
    }
    for _ in 0..2 {
        let listing = p.list(&ListQuery::default()).await.unwrap();
        assert!(listing.skipped.is_empty(), "{:?}", listing.skipped);
        assert_eq!(listing.sessions.len(), 700);
        assert!(
            listing
                .sessions
                .iter()
                .all(|s| s.title.as_deref() == Some(s.header.id.as_str()))
        );
        assert!(
            listing
                .sessions
                .windows(2)
                .all(|w| w[0].updated_at >= w[1].updated_at)
        );
    }
    p.shutdown().await.unwrap();
}
