//! The connection: what every handler reaches through it (the configuration, the services,
//! the writer, the bridge's scope, the sessions' state, the outgoing requests). Its fields
//! are read through accessors and set only here; the routing of the frames it reads is
//! [`dispatch`].

mod dispatch;

use std::sync::Arc;

use dsh_agent::AgentRegistry;
use dsh_kernel::Scope;
use dsh_session::{SessionPersistence, SessionStore};
use dsh_tools::ToolRegistry;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::AcpConfig;
use crate::handlers::ListCache;
use crate::outgoing::OutgoingTable;
use crate::state::ConnState;
use crate::transport::FrameSender;

/// The services the bridge uses, resolved once.
pub(crate) struct Services {
    pub registry: Arc<dyn AgentRegistry>,
    pub store: Arc<SessionStore>,
    pub persistence: Arc<dyn SessionPersistence>,
    pub tools: Arc<dyn ToolRegistry>,
}

/// One client connection.
pub(crate) struct Conn {
    config: AcpConfig,
    services: Services,
    out: FrameSender,
    /// The bridge's own scope: every task it spawns, and the owner of its agents.
    scope: Scope,
    state: ConnState,
    outgoing: Arc<OutgoingTable>,
    /// Creations and loads in flight; teardown waits for them.
    setups: TaskTracker,
    /// Fires when teardown begins.
    closing: CancellationToken,
    /// The last `session/list` read, which the pages after its first reuse.
    listed: ListCache,
    /// The server's model list, asked for once (the model picker's values).
    models: OnceCell<Vec<String>>,
}

impl Conn {
    /// A connection writing to `out`, its tasks in `scope`, before `initialize`.
    pub(crate) fn new(
        config: AcpConfig,
        services: Services,
        out: FrameSender,
        scope: Scope,
    ) -> Conn {
        Conn {
            config,
            services,
            out,
            scope,
            state: ConnState::default(),
            outgoing: Arc::new(OutgoingTable::default()),
            setups: TaskTracker::new(),
            closing: CancellationToken::new(),
            listed: ListCache::default(),
            models: OnceCell::new(),
        }
    }

    pub(crate) fn config(&self) -> &AcpConfig {
        &self.config
    }

    pub(crate) fn services(&self) -> &Services {
        &self.services
    }

    pub(crate) fn out(&self) -> &FrameSender {
        &self.out
    }

    pub(crate) fn scope(&self) -> &Scope {
        &self.scope
    }

    pub(crate) fn state(&self) -> &ConnState {
        &self.state
    }

    pub(crate) fn outgoing(&self) -> &Arc<OutgoingTable> {
        &self.outgoing
    }

    pub(crate) fn setups(&self) -> &TaskTracker {
        &self.setups
    }

    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.closing
    }

    pub(crate) fn listed(&self) -> &ListCache {
        &self.listed
    }

    pub(crate) fn models(&self) -> &OnceCell<Vec<String>> {
        &self.models
    }
}
