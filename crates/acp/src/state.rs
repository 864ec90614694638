//! The connection's state, behind the methods that keep its rules:
//!
//! - **nothing is installed after close**: once teardown has begun, [`ConnState::install`]
//!   gives the record back, and its creator disposes it;
//! - **one load per id**: [`ConnState::reserve_load`] refuses an id that is live or already
//!   loading, and the reservation lasts until [`ConnState::next_deferred`] lifts it;
//! - **frames wait behind a load**: a prompt for an id whose load is running is held by
//!   [`ConnState::defer`] and served, in order, once the load has answered; a cancel of that
//!   session (by session or by request id) dooms the prompts held before it.
//!
//! A held prompt carries its [`Reply`], so a prompt that is never served still gets its
//! answer: the `Reply` answers `-32603` when dropped.

use std::collections::HashMap;
use std::sync::Arc;

use agent_client_protocol_schema::v1::PromptRequest;
use parking_lot::Mutex;
use serde_json::Value;

use crate::live_session::LiveSession;
use crate::reply::Reply;
use crate::request::ClientCaps;

/// A prompt held behind its session's load.
pub(crate) struct Deferred {
    pub reply: Reply,
    pub request: Box<PromptRequest>,
    /// A cancel of its session, or of its request id, arrived after it.
    pub doomed: bool,
}

#[derive(Default)]
struct Inner {
    /// A successful `initialize` was answered.
    initialized: bool,
    /// What the client can do, from its `initialize`.
    caps: ClientCaps,
    /// Teardown began: nothing new is installed.
    closed: bool,
    /// Live sessions by id.
    sessions: HashMap<String, Arc<LiveSession>>,
    /// The child agents of the live sessions (and theirs), by id: each with the session whose
    /// path shows it, the one the client opened.
    children: HashMap<String, Arc<LiveSession>>,
    /// Ids whose `session/load` is running, with the prompts held for them.
    loading: HashMap<String, Vec<Deferred>>,
}

/// The state of one connection.
#[derive(Default)]
pub(crate) struct ConnState(Mutex<Inner>);

impl ConnState {
    /// `initialize` was answered, with this terminal-card choice (a later one replaces it).
    pub(crate) fn initialize(&self, caps: ClientCaps) {
        let mut inner = self.0.lock();
        inner.initialized = true;
        inner.caps = caps;
    }

    pub(crate) fn notices(&self) -> bool {
        self.0.lock().caps.notices
    }

    /// Whether tools read and write through the editor.
    pub(crate) fn editor_files(&self) -> bool {
        self.0.lock().caps.files
    }

    pub(crate) fn is_initialized(&self) -> bool {
        self.0.lock().initialized
    }

    pub(crate) fn compaction(&self) -> bool {
        self.0.lock().caps.compaction
    }

    pub(crate) fn plan(&self) -> bool {
        self.0.lock().caps.plan
    }

    pub(crate) fn terminal_output(&self) -> bool {
        self.0.lock().caps.terminal_output
    }

    pub(crate) fn subagents(&self) -> bool {
        self.0.lock().caps.subagents
    }

    /// Follows the child agent `child`, started by a call of `parent`, on the path of the
    /// session the client opened: `parent` itself or the one `parent` is followed on.
    /// `None` when `parent` is neither (a child of another connection's session).
    pub(crate) fn adopt_child(&self, child: &str, parent: &str) -> Option<Arc<LiveSession>> {
        let mut inner = self.0.lock();
        let root = inner
            .sessions
            .get(parent)
            .or_else(|| inner.children.get(parent))
            .cloned()?;
        inner.children.insert(child.to_owned(), root.clone());
        Some(root)
    }

    /// The record on whose path the child agent `child` is followed.
    pub(crate) fn child_root(&self, child: &str) -> Option<Arc<LiveSession>> {
        self.0.lock().children.get(child).cloned()
    }

    /// The live record of `session_id`, if this connection has one.
    pub(crate) fn record(&self, session_id: &str) -> Option<Arc<LiveSession>> {
        self.0.lock().sessions.get(session_id).cloned()
    }

    /// Every live record.
    pub(crate) fn records(&self) -> Vec<Arc<LiveSession>> {
        self.0.lock().sessions.values().cloned().collect()
    }

    /// The ids of the live sessions.
    pub(crate) fn session_ids(&self) -> Vec<String> {
        self.0.lock().sessions.keys().cloned().collect()
    }

    /// Reserves `id` for one load: prompts for it are held until the reservation is lifted.
    /// False when the session is live on this connection or its load is already running.
    pub(crate) fn reserve_load(&self, id: &str) -> bool {
        let mut inner = self.0.lock();
        if inner.sessions.contains_key(id) || inner.loading.contains_key(id) {
            return false;
        }
        inner.loading.insert(id.to_owned(), Vec::new());
        true
    }

    /// Holds a prompt for `id` while its load runs; gives it back when no load is running.
    pub(crate) fn defer(&self, id: &str, prompt: Deferred) -> Result<(), Deferred> {
        match self.0.lock().loading.get_mut(id) {
            Some(backlog) => {
                backlog.push(prompt);
                Ok(())
            }
            None => Err(prompt),
        }
    }

    /// A cancel of `id` while its load runs: every prompt held so far is doomed. False when no
    /// load of `id` is running.
    pub(crate) fn cancel_deferred(&self, id: &str) -> bool {
        match self.0.lock().loading.get_mut(id) {
            Some(backlog) => {
                backlog.iter_mut().for_each(|held| held.doomed = true);
                true
            }
            None => false,
        }
    }

    /// A `$/cancel_request` naming a held prompt dooms it; true if one was held.
    pub(crate) fn cancel_deferred_request(&self, request_id: &Value) -> bool {
        let mut inner = self.0.lock();
        let mut found = false;
        for held in inner.loading.values_mut().flatten() {
            if held.reply.id() == request_id {
                held.doomed = true;
                found = true;
            }
        }
        found
    }

    /// The prompts held for `id`'s load, oldest first, taken out; `None` once none is left,
    /// which also lifts the reservation (so nothing held can be left behind).
    pub(crate) fn next_deferred(&self, id: &str) -> Option<Vec<Deferred>> {
        let mut inner = self.0.lock();
        match inner.loading.get_mut(id) {
            Some(backlog) if !backlog.is_empty() => Some(std::mem::take(backlog)),
            _ => {
                inner.loading.remove(id);
                None
            }
        }
    }

    /// Installs a live session unless teardown began; false when it did.
    pub(crate) fn install(&self, record: Arc<LiveSession>) -> bool {
        let mut inner = self.0.lock();
        if inner.closed {
            return false;
        }
        inner.sessions.insert(record.id.as_str().to_owned(), record);
        true
    }

    /// Forgets one live session (`session/close`); `None` when it is not open here.
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<LiveSession>> {
        let mut inner = self.0.lock();
        let removed = inner.sessions.remove(id);
        // Its children go with it: a later session never shows them.
        if let Some(root) = &removed {
            inner.children.retain(|_, on| !Arc::ptr_eq(on, root));
        }
        removed
    }

    /// Teardown begins: nothing more is installed. Returns the live records.
    pub(crate) fn close(&self) -> Vec<Arc<LiveSession>> {
        let mut inner = self.0.lock();
        inner.closed = true;
        inner.sessions.values().cloned().collect()
    }

    /// Forgets every session (the end of teardown); what they still held is dropped outside
    /// the lock.
    pub(crate) fn clear(&self) {
        let (sessions, children) = {
            let mut inner = self.0.lock();
            (
                std::mem::take(&mut inner.sessions),
                std::mem::take(&mut inner.children),
            )
        };
        drop((sessions, children));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio_util::sync::CancellationToken;

    use crate::transport::{FrameSender, writer};

    fn held(out: &FrameSender, id: &str) -> Deferred {
        let request: PromptRequest =
            serde_json::from_value(json!({"sessionId": "s", "prompt": []})).unwrap();
        Deferred {
            reply: Reply::new(out.clone(), json!(id)),
            request: Box::new(request),
            doomed: false,
        }
    }

    fn ids(held: &[Deferred]) -> Vec<(String, bool)> {
        held.iter()
            .map(|h| (h.reply.id().as_str().unwrap_or("").to_owned(), h.doomed))
            .collect()
    }

    #[tokio::test]
    async fn one_load_per_id_and_prompts_wait_behind_it_in_order() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (out, writing) = writer(ours, CancellationToken::new());
        let writing = tokio::spawn(writing);
        let state = ConnState::default();
        assert!(
            state.defer("s", held(&out, "early")).is_err(),
            "no load: served now"
        );
        assert!(state.reserve_load("s"));
        assert!(!state.reserve_load("s"), "one load per id");
        assert!(state.defer("s", held(&out, "a")).is_ok());
        assert!(state.cancel_deferred("s"), "a cancel while the load runs");
        assert!(state.defer("s", held(&out, "b")).is_ok());
        assert!(state.defer("s", held(&out, "c")).is_ok());
        assert!(state.cancel_deferred_request(&json!("c")));
        assert!(!state.cancel_deferred_request(&json!("zz")));
        assert!(!state.cancel_deferred("other"));
        let first = state.next_deferred("s").unwrap();
        assert_eq!(
            ids(&first),
            [("a".into(), true), ("b".into(), false), ("c".into(), true)],
            "in order; the cancel dooms what it followed, the request id only its own"
        );
        assert!(state.defer("s", held(&out, "d")).is_ok(), "still loading");
        assert_eq!(
            ids(&state.next_deferred("s").unwrap()),
            [("d".into(), false)]
        );
        assert!(state.next_deferred("s").is_none());
        assert!(state.reserve_load("s"), "the reservation was lifted");
        // A held prompt nobody serves still answers.
        assert!(state.defer("s", held(&out, "orphan")).is_ok());
        for h in first {
            h.reply.send(Ok(json!({})));
        }
        drop(state);
        drop(out);
        writing.await.unwrap();
        let mut lines = BufReader::new(theirs).lines();
        let mut answers = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            let frame: Value = serde_json::from_str(&line).unwrap();
            answers.push((frame["id"].clone(), frame["error"]["code"].clone()));
        }
        assert!(
            answers.contains(&(json!("orphan"), json!(-32603))),
            "{answers:?}"
        );
        assert!(
            answers.contains(&(json!("early"), json!(-32603))),
            "{answers:?}"
        );
    }
}
