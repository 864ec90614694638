//! The registry: publication, lookup, and the arbitration of ids between live, retiring and
//! new agents.
//!
//! A creation of a chosen id first takes an [`IdClaim`]: while it is held, every other
//! creation of the id waits. The claim is given back by dropping it — on every path that does
//! not publish, whatever the path — and consumed by [`IdClaim::publish`], so no path can
//! forget either.

use std::sync::Arc;

use dsh_agent::{Agent, AgentError, AgentRegistry};
use dsh_kernel::Teardown;
use dsh_session::SessionId;
use tokio::sync::watch;

use crate::agent::LoopAgent;
use crate::shared::{Entry, Loop};

/// The loop's `dyn AgentRegistry`.
pub(crate) struct LoopRegistry {
    pub(crate) shared: Arc<Loop>,
}

/// One creation's exclusive hold on an id. Dropped, it reopens the id and wakes whoever waits
/// for it; published, it becomes the live entry.
pub(crate) struct IdClaim {
    shared: Arc<Loop>,
    id: SessionId,
    /// The entry's settled flag: others wait for it.
    settled: Arc<watch::Sender<bool>>,
    /// Became the live entry: nothing to give back.
    published: bool,
}

impl IdClaim {
    /// Claims `id` for one creation: waits while it is retiring or another creation of it is
    /// under way; refuses it at once while it is live.
    pub(crate) async fn take(shared: &Arc<Loop>, id: &SessionId) -> Result<IdClaim, AgentError> {
        enum Wait {
            Settled(watch::Receiver<bool>),
            Teardown(Teardown),
        }
        loop {
            let wait = {
                let mut table = shared.table.lock();
                match table.entries.get(id) {
                    None => {
                        let settled = Arc::new(watch::Sender::new(false));
                        table
                            .entries
                            .insert(id.clone(), Entry::Creating(settled.clone()));
                        return Ok(IdClaim {
                            shared: shared.clone(),
                            id: id.clone(),
                            settled,
                            published: false,
                        });
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
                    let mut table = shared.table.lock();
                    if let Some(Entry::Retiring(t)) = table.entries.get(id)
                        && t.same_as(&retiring)
                    {
                        table.entries.remove(id);
                    }
                }
            }
        }
    }

    /// The claimed id.
    pub(crate) fn id(&self) -> &SessionId {
        &self.id
    }

    /// Publishes `agent` in place of this claim; returns the entry's settled flag. `None`
    /// when the entry is no longer this claim's (which a correct loop never sees): the claim
    /// is dropped then, which changes nothing of the other entry.
    fn publish(
        mut self,
        agent: &Arc<LoopAgent>,
        teardown: &Teardown,
    ) -> Option<Arc<watch::Sender<bool>>> {
        let mut table = self.shared.table.lock();
        let ours = matches!(
            table.entries.get(&self.id),
            Some(Entry::Creating(held)) if Arc::ptr_eq(held, &self.settled)
        );
        if !ours || agent.id != self.id {
            return None;
        }
        insert_live(&mut table, agent, teardown, self.settled.clone());
        drop(table);
        // The entry is the agent's now: the claim must not remove it, and its settled flag
        // is the caller's to set once the handle is delivered.
        self.published = true;
        Some(self.settled.clone())
    }
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        if self.published {
            return;
        }
        let mut table = self.shared.table.lock();
        if let Some(Entry::Creating(held)) = table.entries.get(&self.id)
            && Arc::ptr_eq(held, &self.settled)
        {
            table.entries.remove(&self.id);
        }
        drop(table);
        self.settled.send_replace(true);
    }
}

/// Publishes `agent` under its id — through `claim` when the id was chosen, else under a
/// minted id nobody else can hold; `None` when the id is taken by someone else.
pub(crate) fn publish(
    shared: &Loop,
    agent: &Arc<LoopAgent>,
    teardown: &Teardown,
    claim: Option<IdClaim>,
) -> Option<Arc<watch::Sender<bool>>> {
    match claim {
        Some(claim) => claim.publish(agent, teardown),
        None => {
            let mut table = shared.table.lock();
            if table.entries.contains_key(&agent.id) {
                return None;
            }
            let settled = Arc::new(watch::Sender::new(false));
            insert_live(&mut table, agent, teardown, settled.clone());
            Some(settled)
        }
    }
}

fn insert_live(
    table: &mut crate::shared::Table,
    agent: &Arc<LoopAgent>,
    teardown: &Teardown,
    settled: Arc<watch::Sender<bool>>,
) {
    table.next_order += 1;
    let order = table.next_order;
    table.entries.insert(
        agent.id.clone(),
        Entry::Live {
            order,
            agent: agent.clone(),
            teardown: teardown.clone(),
            settled,
        },
    );
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

impl AgentRegistry for LoopRegistry {
    fn get(&self, id: &SessionId) -> Option<Arc<dyn Agent>> {
        match self.shared.table.lock().entries.get(id) {
            Some(Entry::Live { agent, .. }) => Some(agent.clone()),
            _ => None,
        }
    }

    fn list(&self) -> Vec<Arc<dyn Agent>> {
        let table = self.shared.table.lock();
        let mut live: Vec<(u64, Arc<dyn Agent>)> = table
            .entries
            .values()
            .filter_map(|entry| match entry {
                Entry::Live { order, agent, .. } => Some((*order, agent.clone())),
                Entry::Retiring(_) | Entry::Creating(_) => None,
            })
            .collect();
        drop(table);
        live.sort_by_key(|(order, _)| *order);
        live.into_iter().map(|(_, agent)| agent).collect()
    }
}
