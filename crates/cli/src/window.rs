//! The context window a model is taken to have when the user did not say: DeepSeek's current
//! models from DeepSeek's pricing page (1M tokens for `deepseek-flash`, `deepseek-v4-pro` and
//! the legacy `deepseek-v4-flash`), and a small window for any other model, so that usage
//! reads high rather than low until `context_window` is set. The RFC on context management
//! quotes the source.

use dsh_agent::DEFAULT_CONTEXT_WINDOW;

/// DeepSeek's models and their windows.
const KNOWN: &[(&str, u64)] = &[
    ("deepseek-flash", 1_000_000),
    ("deepseek-v4-pro", 1_000_000),
    ("deepseek-v4-flash", 1_000_000),
];

/// The output limit sent to DeepSeek's models: room for long reasoning and a whole file,
/// far under their 384K maximum.
const DEEPSEEK_MAX_TOKENS: u32 = 65_536;

/// The output limit sent to any other model: a weak local model must not stream for minutes
/// (one streamed 512 calls for 11 minutes with no limit sent).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// The output limit of `model` when the user sets none.
pub fn default_max_tokens(model: &str) -> u32 {
    if KNOWN.iter().any(|(name, _)| *name == model) {
        DEEPSEEK_MAX_TOKENS
    } else {
        DEFAULT_MAX_TOKENS
    }
}

/// The window of `model`.
pub fn default_window(model: &str) -> u64 {
    KNOWN
        .iter()
        .find(|(name, _)| *name == model)
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepseek_models_have_their_window_and_others_a_small_one() {
        assert_eq!(default_window("deepseek-flash"), 1_000_000);
        assert_eq!(default_window("deepseek-v4-pro"), 1_000_000);
        assert_eq!(default_window("qwen3"), 32_768);
    }

    #[test]
    fn deepseek_models_get_a_long_output_limit_and_others_a_short_one() {
        assert_eq!(default_max_tokens("deepseek-flash"), 65_536);
        assert_eq!(default_max_tokens("qwen2.5-coder"), 8192);
    }
}
