//! The context ring: a `usage_update` after every model call — how full the context is, of
//! what window, and, when the model's prices are configured, what the session has cost so
//! far. The cost is cumulative over the session, so a loaded session's live renderer starts
//! from what its replay added up.

use agent_client_protocol_schema::v1::{Cost, SessionUpdate, UsageUpdate};
use dsh_agent::record::ContextUsage;
use dsh_llm::{Prices, Usage};

/// What the ring carries from one call to the next.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ring {
    /// The window the last call reported, for the usage after a compaction.
    window: Option<u64>,
    /// The session's cost so far, in the prices' currency.
    spent: f64,
}

impl Ring {
    /// A model call finished: its usage counts toward the cost, and the ring shows the
    /// context after it (a call that recorded none, from an older log, shows nothing).
    pub(crate) fn answered(
        &mut self,
        context: Option<ContextUsage>,
        usage: Option<&Usage>,
        prices: Option<&Prices>,
    ) -> Option<SessionUpdate> {
        self.spend(usage, prices);
        let context = context?;
        self.window = Some(context.window);
        Some(self.update(context.used, context.window, prices))
    }

    /// A compaction's summary request finished: its usage counts, and the ring shows what
    /// the compaction left (`tokens_after`; 0 in records that predate it says nothing).
    pub(crate) fn compacted(
        &mut self,
        tokens_after: u64,
        usage: Option<&Usage>,
        prices: Option<&Prices>,
    ) -> Option<SessionUpdate> {
        self.spend(usage, prices);
        let window = self.window.filter(|_| tokens_after > 0)?;
        Some(self.update(tokens_after, window, prices))
    }

    fn spend(&mut self, usage: Option<&Usage>, prices: Option<&Prices>) {
        if let (Some(usage), Some(prices)) = (usage, prices) {
            self.spent += prices.cost(usage);
        }
    }

    fn update(&self, used: u64, size: u64, prices: Option<&Prices>) -> SessionUpdate {
        let cost = prices.map(|p| Cost::new(self.spent, p.currency.clone()));
        SessionUpdate::UsageUpdate(UsageUpdate::new(used, size).cost(cost))
    }
}
