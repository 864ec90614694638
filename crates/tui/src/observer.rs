//! The session as the terminal follows it: what the agent appends (and its passing notes,
//! such as a command's output) goes through the turn view, and the view events go to the
//! terminal's loop as one input per record.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_session::{Ephemeral, Session, SessionEvent, SessionObserver};
use dsh_tools::ToolRegistry;
use dsh_view::{Projector, Shown, ViewEvent};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::app::Input;

/// Follows one session until it is no longer the one shown.
pub struct Observer {
    projector: Mutex<Projector>,
    tools: Arc<dyn ToolRegistry>,
    feed: mpsc::UnboundedSender<Input>,
    /// Cleared when the terminal shows another session.
    live: AtomicBool,
}

impl Observer {
    /// An observer of a session through `projector`, feeding `feed`.
    pub fn new(
        projector: Projector,
        tools: Arc<dyn ToolRegistry>,
        feed: mpsc::UnboundedSender<Input>,
    ) -> Arc<Observer> {
        Arc::new(Observer {
            projector: Mutex::new(projector),
            tools,
            feed,
            live: AtomicBool::new(true),
        })
    }

    /// Stops following: the terminal shows another session.
    pub fn stop(&self) {
        self.live.store(false, Ordering::SeqCst);
    }

    /// The view of events already stored (a resumed session's past), as the live ones
    /// would have been shown.
    pub fn replay(&self, events: &[Arc<SessionEvent>]) -> Input {
        let mut projector = self.projector.lock();
        let mut shown = Vec::new();
        for event in events {
            projector.event_into(event, &*self.tools, &mut shown);
        }
        Input::View {
            events: shown,
            tally: Some(projector.tally().clone()),
        }
    }

    fn send(&self, events: Vec<ViewEvent>, projector: &Projector) {
        if events.is_empty() {
            return;
        }
        let counted = events
            .iter()
            .any(|e| matches!(e.shown, Shown::Answered(_) | Shown::Compacted(_)));
        let tally = counted.then(|| projector.tally().clone());
        let _ = self.feed.send(Input::View { events, tally });
    }
}

#[async_trait]
impl SessionObserver for Observer {
    fn name(&self) -> &str {
        "dsh-tui"
    }

    fn on_append(&self, _session: &Session, event: &Arc<SessionEvent>) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        let mut projector = self.projector.lock();
        let events = projector.event(event, &*self.tools);
        self.send(events, &projector);
    }

    fn on_ephemeral(&self, _session: &Session, note: &Ephemeral) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        let mut projector = self.projector.lock();
        let events = projector.ephemeral(note);
        self.send(events, &projector);
    }
}
