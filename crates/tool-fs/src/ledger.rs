//! What each session has read: the version of every file as the model last saw it. An edit
//! is refused unless its file is here with the version on disk now.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use dsh_fs::Version;
use dsh_session::SessionId;
use dsh_tools::ToolContext;
use parking_lot::Mutex;

/// The versions seen, by session, then by path.
#[derive(Default)]
pub(crate) struct Ledger {
    sessions: Mutex<HashMap<String, HashMap<PathBuf, Version>>>,
}

/// The key of calls made outside any agent (a tool test's context).
const NOBODY: &str = "";

impl Ledger {
    /// Records that the caller of `cx` saw `version` of `path`. The first record of a session
    /// arranges for its entries to go with the caller's scope.
    pub(crate) fn saw(self: &Arc<Ledger>, cx: &ToolContext, path: &Path, version: Version) {
        let id = key(cx).to_owned();
        let first = {
            let mut sessions = self.sessions.lock();
            let first = !sessions.contains_key(&id);
            sessions
                .entry(id.clone())
                .or_default()
                .insert(path.to_path_buf(), version);
            first
        };
        if first && let Some(scope) = cx.caller_scope() {
            let ledger: Weak<Ledger> = Arc::downgrade(self);
            let forget = move || async move {
                if let Some(ledger) = ledger.upgrade() {
                    ledger.sessions.lock().remove(&id);
                }
            };
            // A closed scope means the agent is going away: nothing more will be read.
            let _ = scope.add_disposer(forget);
        }
    }

    /// The version of `path` the caller of `cx` last saw.
    pub(crate) fn seen(&self, cx: &ToolContext, path: &Path) -> Option<Version> {
        self.sessions
            .lock()
            .get(key(cx))
            .and_then(|files| files.get(path).cloned())
    }
}

fn key(cx: &ToolContext) -> &str {
    cx.caller_id().map_or(NOBODY, SessionId::as_str)
}
