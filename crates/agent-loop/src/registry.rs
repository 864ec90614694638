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
use tokio::sync::watch;

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
        /// False until the creating call has its handle, or its result was abandoned and
        /// torn down: a second creation of the id waits for that instead of racing it.
        settled: Arc<watch::Sender<bool>>,
    },
    /// Unregistered, its teardown still running: the id reopens when it completes.
    Retiring(Teardown),
    /// A creation or resume of the id is under way; others wait for it to settle.
    Creating(Arc<watch::Sender<bool>>),
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
    /// Claims `id` for one creation: waits while it is retiring or another creation of it is
    /// under way; refuses it at once while it is live. The claim is the entry's settled flag.
    pub(crate) async fn claim_id(
        &self,
        id: &SessionId,
    ) -> Result<Arc<watch::Sender<bool>>, AgentError> {
        enum Wait {
            Settled(watch::Receiver<bool>),
            Teardown(Teardown),
        }
        loop {
            let wait = {
                let mut table = self.shared.table.lock();
                match table.entries.get(id) {
                    None => {
                        let claim = Arc::new(watch::Sender::new(false));
                        table
                            .entries
                            .insert(id.clone(), Entry::Creating(claim.clone()));
                        return Ok(claim);
                    }
                    Some(Entry::Creating(settled)) => Wait::Settled(settled.subscribe()),
                    Some(Entry::Live {
                        teardown, settled, ..
                    }) if !teardown.is_started() => {
                        if *settled.borrow() {
                            return Err(AgentError::AlreadyLive { id: id.clone() });
                        }
                        Wait::Settled(settled.subscribe())
                    }
                    Some(Entry::Live { teardown, .. }) | Some(Entry::Retiring(teardown)) => {
                        Wait::Teardown(teardown.clone())
                    }
                }
            };
            match wait {
                Wait::Settled(mut settled) => {
                    let _ = settled.wait_for(|done| *done).await;
                }
                Wait::Teardown(retiring) => {
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
    }
}

/// Publishes `agent` under its id, replacing this creation's claim (or, for a minted id,
/// with a fresh one); `None` when the id is taken by someone else.
pub(crate) fn publish(
    shared: &Loop,
    agent: &Arc<LoopAgent>,
    teardown: &Teardown,
    claim: Option<&Arc<watch::Sender<bool>>>,
) -> Option<Arc<watch::Sender<bool>>> {
    let mut table = shared.table.lock();
    let ours = match (table.entries.get(&agent.id), claim) {
        (None, None) => true,
        (Some(Entry::Creating(held)), Some(claim)) => Arc::ptr_eq(held, claim),
        _ => false,
    };
    if !ours {
        return None;
    }
    let settled = claim
        .cloned()
        .unwrap_or_else(|| Arc::new(watch::Sender::new(false)));
    table.next_order += 1;
    let order = table.next_order;
    table.entries.insert(
        agent.id.clone(),
        Entry::Live {
            order,
            agent: agent.clone(),
            teardown: teardown.clone(),
            settled: settled.clone(),
        },
    );
    Some(settled)
}

/// Gives up a claim that did not publish, and wakes whoever waits for the id.
pub(crate) fn release(shared: &Loop, id: &SessionId, claim: &Arc<watch::Sender<bool>>) {
    let mut table = shared.table.lock();
    if let Some(Entry::Creating(held)) = table.entries.get(id)
        && Arc::ptr_eq(held, claim)
    {
        table.entries.remove(id);
    }
    drop(table);
    claim.send_replace(true);
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
                Entry::Retiring(_) | Entry::Creating(_) => None,
            })
            .collect();
        drop(table);
        live.sort_by_key(|(order, _)| *order);
        live.into_iter()
            .map(|(_, agent)| agent as Arc<dyn Agent>)
            .collect()
    }
}
