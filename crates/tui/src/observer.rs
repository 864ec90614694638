//! The session as the terminal follows it: what the agent appends (and its passing notes,
//! such as a command's output) goes through the turn view, and the view events go to the
//! terminal's loop as one input per record. The child agents the session's calls start are
//! followed too: each of their steps is one dim line under the task, `↳ label · what`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_session::{Ephemeral, Session, SessionEvent, SessionObserver};
use dsh_tools::ToolRegistry;
use std::collections::HashMap;

use dsh_session::SessionId;
use dsh_view::{Family, Projector, Shown, ViewEvent};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::app::Input;

/// Follows one session until it is no longer the one shown.
pub struct Observer {
    family: Mutex<Followed>,
    tools: Arc<dyn ToolRegistry>,
    feed: mpsc::UnboundedSender<Input>,
    /// Cleared when the terminal shows another session.
    live: AtomicBool,
}

/// The session and its children, with each child's label and depth.
struct Followed {
    family: Family,
    children: HashMap<SessionId, (String, u32)>,
}

impl Observer {
    /// An observer of a session through `projector`, feeding `feed`.
    pub fn new(
        projector: Projector,
        tools: Arc<dyn ToolRegistry>,
        feed: mpsc::UnboundedSender<Input>,
    ) -> Arc<Observer> {
        Arc::new(Observer {
            family: Mutex::new(Followed {
                family: Family::new(projector),
                children: HashMap::new(),
            }),
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
        let mut followed = self.family.lock();
        let root = followed.family.root().session().clone();
        let mut shown = Vec::new();
        for event in events {
            followed
                .family
                .event_into(&root, event, &*self.tools, &mut shown);
        }
        Input::View {
            events: shown,
            tally: Some(followed.family.root().tally().clone()),
        }
    }

    /// Sends the root's events as they are and a child's as lines.
    fn send(&self, events: Vec<ViewEvent>, followed: &mut Followed) {
        let root = followed.family.root().session().clone();
        let (own, children): (Vec<ViewEvent>, Vec<ViewEvent>) =
            events.into_iter().partition(|e| e.session == root);
        for event in children {
            if let Some(line) = child_line(&mut followed.children, &event) {
                let _ = self.feed.send(Input::Notice(line));
            }
        }
        if own.is_empty() {
            return;
        }
        let counted = own
            .iter()
            .any(|e| matches!(e.shown, Shown::Answered(_) | Shown::Compacted(_)));
        let tally = counted.then(|| followed.family.root().tally().clone());
        let _ = self.feed.send(Input::View { events: own, tally });
    }
}

/// The line of a child's event, `  ↳ label · what`; a child's announcement is remembered.
fn child_line(
    children: &mut HashMap<SessionId, (String, u32)>,
    event: &ViewEvent,
) -> Option<String> {
    if let Shown::Subagent(child) = &event.shown {
        children.insert(event.session.clone(), (child.label.clone(), child.depth));
        return None;
    }
    let (label, depth) = children.get(&event.session)?.clone();
    let line = dsh_view::child_line(&event.shown)?;
    if matches!(event.shown, Shown::TurnEnded { .. }) {
        children.remove(&event.session);
    }
    Some(format!("{}↳ {label} · {line}", "  ".repeat(depth as usize)))
}

#[async_trait]
impl SessionObserver for Observer {
    fn name(&self) -> &str {
        "dsh-tui"
    }

    /// A child agent a followed call started is followed from its first event.
    async fn on_created(
        &self,
        session: &Session,
        published_from: u64,
    ) -> Result<(), dsh_kernel::BoxError> {
        if !self.live.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut followed = self.family.lock();
        let mut events = Vec::new();
        if followed.family.adopt(session.header(), &mut events) {
            for event in session.events().iter().filter(|e| e.seq < published_from) {
                followed
                    .family
                    .event_into(session.id(), event, &*self.tools, &mut events);
            }
            self.send(events, &mut followed);
        }
        Ok(())
    }

    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        let mut followed = self.family.lock();
        let mut events = Vec::new();
        followed
            .family
            .event_into(session.id(), event, &*self.tools, &mut events);
        self.send(events, &mut followed);
    }

    fn on_ephemeral(&self, session: &Session, note: &Ephemeral) {
        if !self.live.load(Ordering::SeqCst) {
            return;
        }
        let mut followed = self.family.lock();
        let events = followed.family.ephemeral(session.id(), note);
        self.send(events, &mut followed);
    }
}
