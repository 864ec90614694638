//! What every agent of one loop plugin shares: the configuration, the validated event kinds,
//! the plugin's scope, the store, and the table of ids.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_agent::Agent;
use dsh_kernel::{Scope, Teardown};
use dsh_session::{SessionId, SessionStore};
use tokio::sync::watch;

use crate::config::LoopConfig;
use crate::kinds::Kinds;

pub(crate) struct Loop {
    pub(crate) config: LoopConfig,
    pub(crate) kinds: Kinds,
    /// The loop plugin's scope: agents are created detached from it and owned by it.
    pub(crate) plugin: Scope,
    pub(crate) store: Arc<SessionStore>,
    /// Captured at apply, so verbs from a plain thread can start drivers.
    pub(crate) runtime: tokio::runtime::Handle,
    pub(crate) table: parking_lot::Mutex<Table>,
}

/// What the loop holds for one id.
pub(crate) enum Entry {
    /// Published: `get` returns it until its teardown unregisters it.
    Live {
        order: u64,
        agent: Arc<dyn Agent>,
        teardown: Teardown,
        /// False until the creating call has its handle, or its result was abandoned and
        /// torn down: a second creation of the id waits for that instead of racing it.
        settled: Arc<watch::Sender<bool>>,
    },
    /// Unregistered, its teardown still running: the id reopens when it completes.
    Retiring(Teardown),
    /// A creation or resume of the id is under way; others wait for it to settle.
    Creating(Arc<watch::Sender<bool>>),
}

/// Every id the loop knows, and the publication order of the live ones.
#[derive(Default)]
pub(crate) struct Table {
    pub(crate) entries: HashMap<SessionId, Entry>,
    pub(crate) next_order: u64,
}
