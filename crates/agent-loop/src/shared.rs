//! What every agent of one loop plugin shares.

use std::sync::Arc;

use dsh_kernel::Scope;
use dsh_session::SessionStore;

use crate::config::LoopConfig;
use crate::kinds::Kinds;
use crate::registry::Table;

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
