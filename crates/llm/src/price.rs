//! What a model's tokens cost: prices per million tokens, in one currency, applied to a
//! call's reported usage. dsh ships no price list (prices change, and a stale one is worse
//! than none); a user who configures the prices gets costs.

use serde::{Deserialize, Serialize};

use crate::types::Usage;

/// A model's prices per million tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// Prompt tokens not served from the server's cache.
    pub input: f64,
    /// Prompt tokens served from the cache; `None` bills them as `input`.
    pub cached_input: Option<f64>,
    /// Completion tokens (reasoning included).
    pub output: f64,
    /// The unit of the prices: an ISO 4217 code such as `USD` or `CNY`, or a word such as
    /// `credits`.
    pub currency: String,
}

impl Prices {
    /// What one call cost. Cache hits are billed at the cached price; the rest of the prompt
    /// (the server's `input_tokens` include the hits) at the input price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let hits = usage.cache_hit_tokens.unwrap_or(0).min(usage.input_tokens);
        let misses = usage.input_tokens - hits;
        let cached = self.cached_input.unwrap_or(self.input);
        (misses as f64 * self.input
            + hits as f64 * cached
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_hits_are_billed_at_the_cached_price_and_the_rest_at_the_input_price() {
        let prices = Prices {
            input: 2.0,
            cached_input: Some(0.5),
            output: 8.0,
            currency: "CNY".into(),
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 500_000,
            cache_hit_tokens: Some(400_000),
            ..Usage::default()
        };
        // 600k misses at 2, 400k hits at 0.5, 500k out at 8.
        assert!((prices.cost(&usage) - (1.2 + 0.2 + 4.0)).abs() < 1e-9);
        let uncached = Prices {
            cached_input: None,
            ..prices
        };
        assert!((uncached.cost(&usage) - (2.0 + 4.0)).abs() < 1e-9);
        let odd = Usage {
            input_tokens: 10,
            cache_hit_tokens: Some(99),
            ..Usage::default()
        };
        assert!(
            uncached.cost(&odd) >= 0.0,
            "a server over-reporting hits costs no less than 0"
        );
    }
}
