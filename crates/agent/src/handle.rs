//! The teardown capability of an agent.

use std::sync::Arc;

use dsh_kernel::Teardown;
use futures::future::BoxFuture;

use crate::agent::Agent;

/// A handle to a live agent and its one teardown. Clones share the teardown; dropping handles
/// disposes nothing.
#[derive(Clone)]
pub struct AgentHandle {
    agent: Arc<dyn Agent>,
    teardown: Teardown,
}

impl AgentHandle {
    /// A handle to `agent` whose disposal runs `teardown` (for providers). Owner scopes link
    /// to the same [`Teardown`], so every owner runs the one teardown.
    pub fn new(agent: Arc<dyn Agent>, teardown: Teardown) -> AgentHandle {
        AgentHandle { agent, teardown }
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The shared teardown, for linking another owner (`scope.own(handle.teardown())`).
    pub fn teardown(&self) -> &Teardown {
        &self.teardown
    }

    /// Tears the agent down, or waits for the teardown already under way. Memoised: every
    /// call resolves when the one teardown has completed, at once afterwards; dropping the
    /// returned future does not interrupt it.
    pub fn dispose(&self) -> BoxFuture<'static, ()> {
        let teardown = self.teardown.clone();
        Box::pin(async move { teardown.run().await })
    }

    /// True once the teardown has completed.
    pub fn is_disposed(&self) -> bool {
        self.teardown.is_done()
    }
}

impl std::fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentHandle")
            .field("id", self.agent.id())
            .field("disposed", &self.is_disposed())
            .finish()
    }
}
