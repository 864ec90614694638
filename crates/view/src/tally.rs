//! What a session's model calls used: the totals a footer reports, what they cost at the
//! model's prices, and how full the context was after the last call. A server that reports
//! no usage leaves the totals unknown (shown as "not reported", never as 0) and the context
//! estimated (shown with `~`).

use dsh_agent::record::{AssistantMessageRecord, CompactedRecord, ContextUsage};
use dsh_llm::{Prices, Usage};
use dsh_tools::words::tokens;

/// The usage of a session so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Model calls that finished.
    pub steps: u32,
    /// Prompt tokens, over the calls the server reported.
    pub input: u64,
    /// Completion tokens, likewise.
    pub output: u64,
    /// Prompt tokens served from the server's cache.
    pub cache_hit: u64,
    /// Some call's usage was reported.
    pub reported: bool,
    /// The context after the last call that said, or after a compaction since.
    pub context: Option<ContextUsage>,
    /// The agent's context window, for a compaction before any call that reported one.
    pub window: Option<u64>,
    /// The model's prices, when configured.
    pub prices: Option<Prices>,
    /// What the calls cost at those prices, in their currency.
    pub spent: f64,
    /// The last finished call said something a person can read: a turn that ends otherwise
    /// ended without an answer.
    pub answered: bool,
}

impl Tally {
    /// Adds one finished model call.
    pub fn count(&mut self, answer: &AssistantMessageRecord) {
        self.steps += 1;
        self.answered = !answer.message.content.trim().is_empty();
        self.add(answer.usage.as_ref());
        if answer.context.is_some() {
            self.context = answer.context;
        }
    }

    /// A compaction: its summary request counts in the totals, and the context is now what
    /// it left, an estimate; returns that context when the window is known.
    pub fn compacted(&mut self, record: &CompactedRecord) -> Option<ContextUsage> {
        self.add(record.usage.as_ref());
        let window = self.context.map(|c| c.window).or(self.window)?;
        if record.tokens_after == 0 {
            return None;
        }
        let context = ContextUsage {
            used: record.tokens_after,
            window,
            estimated: true,
        };
        self.context = Some(context);
        Some(context)
    }

    /// Adds one call's reported usage to the totals and the cost.
    fn add(&mut self, usage: Option<&Usage>) {
        let Some(usage) = usage.filter(|u| u.input_tokens > 0) else {
            return;
        };
        self.reported = true;
        self.input += usage.input_tokens;
        self.output += usage.output_tokens;
        self.cache_hit += usage.cache_hit_tokens.unwrap_or(0);
        if let Some(prices) = &self.prices {
            self.spent += prices.cost(usage);
        }
    }

    /// The footer's usage parts: the context against the window, then the totals.
    pub fn footer(&self) -> Vec<String> {
        let mut parts = Vec::new();
        if let Some(context) = &self.context {
            let approx = if context.estimated { "~" } else { "" };
            // Past 100 % the window is wrong, not the context: a percentage would mislead.
            let share = if context.used <= context.window {
                format!(
                    "{}%",
                    context.used.saturating_mul(100) / context.window.max(1)
                )
            } else {
                "over the window".to_owned()
            };
            parts.push(format!(
                "context {approx}{}/{} ({share})",
                tokens(context.used),
                tokens(context.window)
            ));
        }
        parts.push(match self.reported {
            true => format!(
                "in {} (cache hit {}) · out {}",
                tokens(self.input),
                tokens(self.cache_hit),
                tokens(self.output)
            ),
            false => "token usage not reported by the server".to_owned(),
        });
        if let Some(prices) = self.prices.as_ref().filter(|_| self.reported) {
            parts.push(format!("cost {:.4} {}", self.spent, prices.currency));
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_agent::record::AssistantReply;
    use dsh_llm::Usage;

    fn answer(usage: Option<Usage>, context: Option<ContextUsage>) -> AssistantMessageRecord {
        AssistantMessageRecord {
            turn: 1,
            step: 1,
            message: AssistantReply::default(),
            model: "m".into(),
            finish: None,
            usage,
            context,
            interrupted: false,
        }
    }

    #[test]
    fn a_server_without_usage_never_reads_as_zero() {
        let mut tally = Tally::default();
        let estimated = ContextUsage {
            used: 2_500,
            window: 32_768,
            estimated: true,
        };
        tally.count(&answer(None, Some(estimated)));
        assert_eq!(
            tally.footer(),
            [
                "context ~2.5k/32.8k (7%)",
                "token usage not reported by the server"
            ]
        );
        let reported = Usage {
            input_tokens: 120_000,
            output_tokens: 900,
            cache_hit_tokens: Some(100_000),
            ..Usage::default()
        };
        let context = ContextUsage {
            used: 120_900,
            window: 1_000_000,
            estimated: false,
        };
        tally.count(&answer(Some(reported), Some(context)));
        assert_eq!(
            tally.footer(),
            [
                "context 120.9k/1M (12%)",
                "in 120k (cache hit 100k) · out 900"
            ]
        );
        assert_eq!(tally.steps, 2);
    }
}
