//! Per-agent options.

use std::num::{NonZeroU32, NonZeroU64};

use dsh_llm::ReasoningEffort;

use crate::error::AgentError;
use crate::instructions::{Audience, CallerPrompt};

/// The most steps a turn may be allowed.
pub const MAX_STEPS_LIMIT: u32 = 10_000;

/// How an agent runs its turns. `Default` gives the documented defaults.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AgentOptions {
    /// The caller's own instructions, combined with the context service's system text as
    /// their mode says (sent alone when no context service is provided).
    pub system_prompt: Option<CallerPrompt>,
    /// Who reads the answers (one sentence of the built-in prompt depends on it).
    pub audience: Audience,
    /// The model's output token limit.
    pub max_output_tokens: Option<NonZeroU32>,
    /// Sampling temperature, 0 ..= 2.
    pub temperature: Option<f32>,
    /// Reasoning effort for thinking models.
    pub reasoning: Option<ReasoningEffort>,
    /// Model requests per turn, 1 ..= 10 000 (default 50).
    pub max_steps: NonZeroU32,
    /// Tool calls one step runs, 1 ..= 1 000 (default 16); the model is told the rest did not
    /// run.
    pub max_tool_calls: NonZeroU32,
    /// The model's context window in tokens, against which each call's usage is told
    /// (default [`DEFAULT_CONTEXT_WINDOW`]).
    pub context_window: NonZeroU64,
    /// The share of the window at which the next step first compacts the history, 0 ..= 1
    /// (default 0.8); 0 never compacts.
    pub compact_at: f32,
    /// Tokens of the most recent tool output a request keeps whole (default 40,000); older
    /// outputs are replaced, in the request only, by a note. 0 keeps every output.
    pub keep_tool_output: u64,
}

/// Tool calls one step runs when nobody said: more than a capable model asks for at once, far
/// fewer than a weak one that loops (512 in one step was seen).
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 16;

/// The most `max_tool_calls` may be.
pub const MAX_TOOL_CALLS_LIMIT: u32 = 1000;

/// The window assumed when nobody said: small enough for most local models, so usage reads
/// high rather than low.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 32_768;

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            system_prompt: None,
            audience: Audience::Terminal,
            max_output_tokens: None,
            temperature: None,
            reasoning: None,
            max_steps: NonZeroU32::MIN.saturating_add(49),
            max_tool_calls: NonZeroU32::MIN.saturating_add(DEFAULT_MAX_TOOL_CALLS - 1),
            context_window: NonZeroU64::MIN.saturating_add(DEFAULT_CONTEXT_WINDOW - 1),
            compact_at: 0.8,
            keep_tool_output: 40_000,
        }
    }
}

impl AgentOptions {
    /// Checks the ranges: `max_steps` ≤ 10 000, `temperature` finite and in 0 ..= 2.
    pub fn validate(&self) -> Result<(), AgentError> {
        if self.max_steps.get() > MAX_STEPS_LIMIT {
            return Err(AgentError::InvalidRequest {
                field: "options.max_steps".into(),
                reason: format!("{} is over {MAX_STEPS_LIMIT}", self.max_steps),
            });
        }
        if self.max_tool_calls.get() > MAX_TOOL_CALLS_LIMIT {
            return Err(AgentError::InvalidRequest {
                field: "options.max_tool_calls".into(),
                reason: format!("{} is over {MAX_TOOL_CALLS_LIMIT}", self.max_tool_calls),
            });
        }
        if let Some(t) = self.temperature
            && !(t.is_finite() && (0.0..=2.0).contains(&t))
        {
            return Err(AgentError::InvalidRequest {
                field: "options.temperature".into(),
                reason: format!("{t} is outside 0..=2"),
            });
        }
        if !(self.compact_at.is_finite() && (0.0..=1.0).contains(&self.compact_at)) {
            return Err(AgentError::InvalidRequest {
                field: "options.compact_at".into(),
                reason: format!("{} is outside 0..=1", self.compact_at),
            });
        }
        Ok(())
    }
}

/// Overrides of the loop's default [`AgentOptions`], field by field: a field left `None` keeps
/// the default, so a caller sets only what it means to change (a request that sets the
/// temperature does not also reset the step limit).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentOverrides {
    /// Replaces the caller's instructions.
    pub system_prompt: Option<CallerPrompt>,
    /// Replaces the audience.
    pub audience: Option<Audience>,
    /// Replaces the output token limit.
    pub max_output_tokens: Option<NonZeroU32>,
    /// Replaces the sampling temperature.
    pub temperature: Option<f32>,
    /// Replaces the reasoning effort.
    pub reasoning: Option<ReasoningEffort>,
    /// Replaces the step limit.
    pub max_steps: Option<NonZeroU32>,
    /// Replaces the limit of tool calls one step runs.
    pub max_tool_calls: Option<NonZeroU32>,
    /// Replaces the context window.
    pub context_window: Option<NonZeroU64>,
    /// Replaces the compaction threshold.
    pub compact_at: Option<f32>,
    /// Replaces how much recent tool output a request keeps whole.
    pub keep_tool_output: Option<u64>,
}

impl AgentOverrides {
    /// The options `defaults` become with these overrides.
    pub fn apply_to(&self, defaults: &AgentOptions) -> AgentOptions {
        AgentOptions {
            system_prompt: self
                .system_prompt
                .clone()
                .or_else(|| defaults.system_prompt.clone()),
            audience: self.audience.unwrap_or(defaults.audience),
            max_output_tokens: self.max_output_tokens.or(defaults.max_output_tokens),
            temperature: self.temperature.or(defaults.temperature),
            reasoning: self.reasoning.or(defaults.reasoning),
            max_steps: self.max_steps.unwrap_or(defaults.max_steps),
            max_tool_calls: self.max_tool_calls.unwrap_or(defaults.max_tool_calls),
            context_window: self.context_window.unwrap_or(defaults.context_window),
            compact_at: self.compact_at.unwrap_or(defaults.compact_at),
            keep_tool_output: self.keep_tool_output.unwrap_or(defaults.keep_tool_output),
        }
    }

    /// Checks the ranges of the fields set, as [`AgentOptions::validate`] does.
    pub fn validate(&self) -> Result<(), AgentError> {
        self.apply_to(&AgentOptions::default()).validate()
    }
}
