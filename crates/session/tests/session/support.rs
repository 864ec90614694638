//! A configurable observer that records every callback it gets.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dsh_kernel::BoxError;
use dsh_session::{DisposeReason, Ephemeral, Session, SessionEvent, SessionObserver};

#[derive(Default)]
pub struct Recorder {
    pub name: String,
    pub calls: Mutex<Vec<String>>,
    pub seen: Mutex<Vec<u64>>,
    pub veto: AtomicBool,
    pub panic_on_created: AtomicBool,
    pub fail_flush: AtomicBool,
    pub panic_every: AtomicU64,
    pub panic_disposed: AtomicBool,
    pub appends: AtomicU64,
    /// Appends (`e<seq>`) and ephemeral notices (`n<before_seq>:<data>`), in arrival order.
    pub order: Mutex<Vec<String>>,
}

impl Recorder {
    pub fn new(name: &str) -> Arc<Recorder> {
        Arc::new(Recorder {
            name: name.into(),
            ..Recorder::default()
        })
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn note(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait::async_trait]
impl SessionObserver for Recorder {
    fn name(&self) -> &str {
        &self.name
    }

    async fn on_created(&self, s: &Session, published_from: u64) -> Result<(), BoxError> {
        self.note(format!("created {} from {published_from}", s.id()));
        if self.panic_on_created.load(Ordering::SeqCst) {
            panic!("on_created exploded");
        }
        if self.veto.load(Ordering::SeqCst) {
            return Err("not today".into());
        }
        Ok(())
    }

    fn on_ephemeral(&self, _s: &Session, note: &Ephemeral) {
        self.order
            .lock()
            .unwrap()
            .push(format!("n{}:{}", note.before_seq, note.data.get()));
    }

    fn on_append(&self, _s: &Session, event: &Arc<SessionEvent>) {
        self.order.lock().unwrap().push(format!("e{}", event.seq));
        self.seen.lock().unwrap().push(event.seq);
        let n = self.appends.fetch_add(1, Ordering::SeqCst) + 1;
        let every = self.panic_every.load(Ordering::SeqCst);
        if every > 0 && n.is_multiple_of(every) {
            panic!("on_append exploded at {n}");
        }
    }

    async fn on_flush(&self, s: &Session) -> Result<(), BoxError> {
        self.note(format!("flush {}", s.id()));
        if self.fail_flush.load(Ordering::SeqCst) {
            return Err("disk full".into());
        }
        Ok(())
    }

    async fn on_disposed(&self, s: &Session, why: DisposeReason) -> Result<(), BoxError> {
        self.note(format!("disposed {} {why:?}", s.id()));
        if self.panic_disposed.load(Ordering::SeqCst) {
            panic!("on_disposed exploded");
        }
        Ok(())
    }
}

pub use dsh_test_support::logs::capture as capture_logs;
