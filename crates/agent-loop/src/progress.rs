//! A running call's progress, on its way to the session's live observers.
//!
//! The tool hands text to a sink that only buffers, so a tool never waits for a watcher. A
//! pump on the agent's scope publishes what is buffered as a `tool/progress` notice: the first
//! piece at once, later ones at most every [`INTERVAL`], coalesced — a chatty command costs
//! about twenty notices a second, not one per read. What a slow pump has not taken yet is
//! capped at [`PENDING_LIMIT`]; beyond that, the oldest text is dropped with a marker, since
//! the result holds the head and tail the model sees anyway. When the call ends, the loop
//! flushes what is left before it appends the result, under the lock the pump publishes
//! under, so every piece of a call reaches observers before its `tool/result`.

use std::sync::Arc;
use std::time::Duration;

use dsh_agent::record::ToolProgressRecord;
use dsh_session::{EventType, Session};
use dsh_tools::ProgressSink;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// The shortest time between two notices of one call.
pub(crate) const INTERVAL: Duration = Duration::from_millis(50);

/// The most text buffered for one call before the oldest is dropped.
pub(crate) const PENDING_LIMIT: usize = 256 * 1024;

/// One call's progress.
pub(crate) struct CallProgress {
    pending: Mutex<Pending>,
    /// Held while a notice is published, so a flush never overtakes a publication.
    publishing: Mutex<()>,
    wake: Notify,
    session: Session,
    kind: EventType,
    turn: u32,
    step: u32,
    call_id: String,
}

#[derive(Default)]
struct Pending {
    text: String,
    dropped: u64,
    closed: bool,
}

impl CallProgress {
    pub(crate) fn new(
        session: Session,
        kind: EventType,
        turn: u32,
        step: u32,
        call_id: String,
    ) -> Arc<CallProgress> {
        Arc::new(CallProgress {
            pending: Mutex::new(Pending::default()),
            publishing: Mutex::new(()),
            wake: Notify::new(),
            session,
            kind,
            turn,
            step,
            call_id,
        })
    }

    /// The sink a tool body gets: buffers and wakes the pump, nothing more.
    pub(crate) fn sink(self: &Arc<CallProgress>) -> ProgressSink {
        let me = self.clone();
        Arc::new(move |text: &str| {
            {
                let mut pending = me.pending.lock();
                if pending.closed {
                    return;
                }
                pending.text.push_str(text);
                if pending.text.len() > PENDING_LIMIT {
                    let mut cut = pending.text.len() - PENDING_LIMIT;
                    while !pending.text.is_char_boundary(cut) {
                        cut += 1;
                    }
                    pending.text.drain(..cut);
                    pending.dropped += cut as u64;
                }
            }
            me.wake.notify_one();
        })
    }

    /// Publishes until the call ends: at once after a quiet spell, then at most every
    /// [`INTERVAL`].
    pub(crate) async fn pump(self: Arc<CallProgress>) {
        loop {
            self.wake.notified().await;
            if !self.publish() {
                return;
            }
            tokio::time::sleep(INTERVAL).await;
        }
    }

    /// Publishes what is buffered; false once the call ended.
    fn publish(&self) -> bool {
        let _publishing = self.publishing.lock();
        let (text, dropped, closed) = {
            let mut pending = self.pending.lock();
            (
                std::mem::take(&mut pending.text),
                std::mem::take(&mut pending.dropped),
                pending.closed,
            )
        };
        if closed {
            return false;
        }
        self.notify(text, dropped);
        true
    }

    /// Ends the call's progress: publishes what is left, then nothing more. Called before the
    /// call's result is appended.
    pub(crate) fn finish(&self) {
        let _publishing = self.publishing.lock();
        let (text, dropped) = {
            let mut pending = self.pending.lock();
            pending.closed = true;
            (
                std::mem::take(&mut pending.text),
                std::mem::take(&mut pending.dropped),
            )
        };
        self.notify(text, dropped);
        self.wake.notify_one();
    }

    fn notify(&self, mut text: String, dropped: u64) {
        if dropped > 0 {
            text.insert_str(0, &format!("\n[… {dropped} bytes not shown …]\n"));
        }
        if text.is_empty() {
            return;
        }
        let record = ToolProgressRecord {
            turn: self.turn,
            step: self.step,
            call_id: self.call_id.clone(),
            output: text,
        };
        if let Err(err) = self.session.notify(&self.kind, &record) {
            tracing::debug!(call = %self.call_id, "progress not shown: {err}");
        }
    }
}
