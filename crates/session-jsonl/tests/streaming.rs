//! Loading a 256 MiB log never makes one allocation larger than `MAX_EVENT_BYTES` plus
//! 64 KiB, so the file is streamed, never read into one buffer. A test binary of its own,
//! because it installs a counting global allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// A global allocator is unsafe by definition; this one only forwards to `System` and records
// sizes. No maintained crate reports the largest single allocation.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use dsh_session::{
    CloseIntent, EventType, EventVocabulary, MAX_EVENT_BYTES, Origin, SessionEvent, SessionHeader,
    SessionId, SessionPersistence,
};
use dsh_session_jsonl::{JsonlConfig, JsonlPersistence};
use serde_json::value::RawValue;

/// Records the largest single allocation while `WATCHING` is set.
struct Counting;

static WATCHING: AtomicBool = AtomicBool::new(false);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if WATCHING.load(Ordering::Relaxed) {
            LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: forwards the caller's layout to the system allocator unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if WATCHING.load(Ordering::Relaxed) {
            LARGEST.fetch_max(new_size, Ordering::Relaxed);
        }
        // SAFETY: same contract as `GlobalAlloc::realloc`, forwarded to `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[tokio::test]
async fn a_256_mib_log_is_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let p = JsonlPersistence::new(JsonlConfig::new(dir.path())).unwrap();
    let hd = SessionHeader {
        version: 1,
        id: SessionId::parse("streamed").unwrap(),
        created_at: 1,
        cwd: "/big".into(),
        parent: None,
        seed_len: None,
        parent_call: None,
    };
    let event = |seq: u64, data: String| SessionEvent {
        seq,
        kind: EventType::new("user/message").unwrap(),
        time: 1,
        ignorable: false,
        data: RawValue::from_string(data).unwrap(),
    };
    p.create(&hd, Origin::New).await.unwrap();
    p.append(&hd.id, &[Arc::new(event(0, "0".into()))])
        .await
        .unwrap();
    p.close(&hd.id, CloseIntent::Flush).await.unwrap();
    let path = p.locate(&hd.id).await.unwrap().unwrap().path.unwrap();

    // Append the rest directly: 2 700 events of 100 KiB.
    let body = format!("\"{}\"", "b".repeat(100 * 1024));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let mut line = Vec::new();
    for seq in 1..=2_700u64 {
        line.clear();
        event(seq, body.clone()).encode_into(&mut line);
        line.push(b'\n');
        file.write_all(&line).unwrap();
    }
    drop(file);
    assert!(std::fs::metadata(&path).unwrap().len() > 256 * 1024 * 1024);

    WATCHING.store(true, Ordering::SeqCst);
    let loaded = p.load(&hd.id, &EventVocabulary::new()).await.unwrap();
    WATCHING.store(false, Ordering::SeqCst);
    assert_eq!(loaded.events.len(), 2_701);
    let largest = LARGEST.load(Ordering::SeqCst);
    assert!(
        largest <= MAX_EVENT_BYTES + 64 * 1024,
        "largest single allocation was {largest} bytes"
    );
}
