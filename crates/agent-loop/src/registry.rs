//! The registry: publication, lookup, and the arbitration of ids between live, retiring and
//! new agents.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent::{
    Agent, AgentError, AgentFactory, AgentHandle, AgentRegistry, CreateAgent, ResumeAgent,
};
use dsh_kernel::Teardown;
use dsh_session::SessionId;

use crate::agent::LoopAgent;
use crate::create::{create, resume};
use crate::shared::Loop;

/// What the loop holds for one id.
pub(crate) enum Entry {
    /// Published: `get` returns it until its teardown unregisters it.
    Live {
        order: u64,
        agent: Arc<LoopAgent>,
        teardown: Teardown,
    },
    /// Unregistered, its teardown still running: the id reopens when it completes.
    Retiring(Teardown),
}

#[derive(Default)]
pub(crate) struct Table {
    pub(crate) entries: HashMap<SessionId, Entry>,
    pub(crate) next_order: u64,
}

/// The loop's `dyn AgentRegistry`.
pub(crate) struct LoopRegistry {
    pub(crate) shared: Arc<Loop>,
}

impl LoopRegistry {
    /// Waits while `id` is retiring; refuses it at once while it is live. Returns when the id
    /// is free (a creation may still lose the race for it where the session enters the store).
    pub(crate) async fn claim_id(&self, id: &SessionId) -> Result<(), AgentError> {
        loop {
            let retiring = {
                let table = self.shared.table.lock();
                match table.entries.get(id) {
                    None => return Ok(()),
                    Some(Entry::Live { teardown, .. }) if !teardown.is_started() => {
                        return Err(AgentError::AlreadyLive { id: id.clone() });
                    }
                    Some(Entry::Live { teardown, .. }) | Some(Entry::Retiring(teardown)) => {
                        teardown.clone()
                    }
                }
            };
            retiring.run().await;
            let mut table = self.shared.table.lock();
            if let Some(Entry::Retiring(t)) = table.entries.get(id)
                && t.same_as(&retiring)
            {
                table.entries.remove(id);
            }
        }
    }
}

/// Publishes `agent` under its id; false when the id is taken meanwhile.
pub(crate) fn publish(shared: &Loop, agent: &Arc<LoopAgent>, teardown: &Teardown) -> bool {
    let mut table = shared.table.lock();
    if table.entries.contains_key(&agent.id) {
        return false;
    }
    table.next_order += 1;
    let order = table.next_order;
    table.entries.insert(
        agent.id.clone(),
        Entry::Live {
            order,
            agent: agent.clone(),
            teardown: teardown.clone(),
        },
    );
    true
}

/// Unregisters a published agent (teardown step 4); its id stays retiring until the
/// teardown completes.
pub(crate) fn unregister(shared: &Arc<Loop>, id: &SessionId) {
    let teardown = {
        let mut table = shared.table.lock();
        match table.entries.remove(id) {
            Some(Entry::Live { teardown, .. }) => {
                table
                    .entries
                    .insert(id.clone(), Entry::Retiring(teardown.clone()));
                Some(teardown)
            }
            Some(other) => {
                table.entries.insert(id.clone(), other);
                None
            }
            None => None,
        }
    };
    if let Some(teardown) = teardown {
        let shared = shared.clone();
        let id = id.clone();
        // Reopens the id once the teardown, of which this is a step, has completed.
        shared.runtime.clone().spawn(async move {
            teardown.run().await;
            let mut table = shared.table.lock();
            if let Some(Entry::Retiring(t)) = table.entries.get(&id)
                && t.same_as(&teardown)
            {
                table.entries.remove(&id);
            }
        });
    }
}

#[async_trait]
impl AgentFactory for LoopRegistry {
    async fn create(&self, request: CreateAgent) -> Result<AgentHandle, AgentError> {
        create(self, request).await
    }

    async fn resume(&self, request: ResumeAgent) -> Result<AgentHandle, AgentError> {
        resume(self, request).await
    }
}

impl AgentRegistry for LoopRegistry {
    fn get(&self, id: &SessionId) -> Option<Arc<dyn Agent>> {
        match self.shared.table.lock().entries.get(id) {
            Some(Entry::Live { agent, .. }) => Some(agent.clone() as Arc<dyn Agent>),
            _ => None,
        }
    }

    fn list(&self) -> Vec<Arc<dyn Agent>> {
        let table = self.shared.table.lock();
        let mut live: Vec<(u64, Arc<LoopAgent>)> = table
            .entries
            .values()
            .filter_map(|entry| match entry {
                Entry::Live { order, agent, .. } => Some((*order, agent.clone())),
                Entry::Retiring(_) => None,
            })
            .collect();
        drop(table);
        live.sort_by_key(|(order, _)| *order);
        live.into_iter()
            .map(|(_, agent)| agent as Arc<dyn Agent>)
            .collect()
    }
}
