//! The vocabulary of one model call. Everything serializes, because the agent
//! records requests and outcomes in the session log.

use serde::{Deserialize, Serialize};

/// One conversation message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// The user's words.
    User {
        /// The text.
        content: String,
    },
    /// A model turn.
    Assistant {
        /// The visible text.
        content: String,
        /// Thinking-mode reasoning, sent back where the API requires it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// The tools the model asked to call.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer to one call.
    Tool {
        /// The call answered.
        call_id: String,
        /// What the model sees.
        content: String,
    },
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as raw JSON text.
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name, `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object).
    pub parameters: serde_json::Value,
}

/// How hard a thinking model should think.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Thinking disabled.
    Off,
    /// Little.
    Low,
    /// Some.
    Medium,
    /// Much.
    High,
    /// The most the model offers.
    Max,
}

impl ReasoningEffort {
    /// Every level, least first: the order a picker lists them.
    pub const ALL: [ReasoningEffort; 5] = [
        ReasoningEffort::Off,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
        ReasoningEffort::Max,
    ];

    /// The level's name in flags, config files and ACP: `off`, `low`, `medium`, `high`, `max`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Off => "off",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Max => "max",
        }
    }

    /// The level named `name`, if one is.
    pub fn parse(name: &str) -> Option<ReasoningEffort> {
        ReasoningEffort::ALL
            .into_iter()
            .find(|level| level.as_str() == name)
    }
}

/// Sampling and budget parameters; `None` means the server's default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelParams {
    /// Output token limit (≥ 1).
    pub max_tokens: Option<u32>,
    /// Sampling temperature (0..=2).
    pub temperature: Option<f32>,
    /// Reasoning effort.
    pub reasoning: Option<ReasoningEffort>,
    /// Another of the provider's models for this call (a session's model picker); `None`
    /// is the model the provider was configured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// One model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools on offer.
    pub tools: Vec<ToolSpec>,
    /// Parameters.
    pub params: ModelParams,
    /// For logging and replay matching only; never sent on the wire.
    pub session_id: Option<String>,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It wants tools run.
    ToolCalls,
    /// It hit the output limit.
    Length,
    /// A filter stopped it.
    ContentFilter,
    /// Something this dsh does not know.
    Other(String),
}

/// Token accounting of one call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Their total, when reported.
    pub total_tokens: Option<u64>,
    /// Prompt tokens served from the server's cache.
    pub cache_hit_tokens: Option<u64>,
    /// Prompt tokens not in the cache.
    pub cache_miss_tokens: Option<u64>,
    /// Completion tokens spent on reasoning.
    pub reasoning_tokens: Option<u64>,
}

/// One item of a model stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelEvent {
    /// A piece of reasoning (non-empty).
    ReasoningDelta(String),
    /// A piece of visible text (non-empty).
    TextDelta(String),
    /// A tool call begins.
    ToolCallStart {
        /// Dense from 0 in start order.
        index: u32,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a call's arguments (non-empty).
    ToolCallArgumentsDelta {
        /// The call.
        index: u32,
        /// The piece.
        fragment: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// The call.
        index: u32,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Every fragment, concatenated.
        arguments: String,
    },
    /// Token accounting, at most once, right before `Finish`.
    Usage(Usage),
    /// The end of a successful stream.
    Finish {
        /// Why the model stopped.
        reason: FinishReason,
    },
}

/// Static facts about a model, for labels, logs and the `model` field of `assistant/message`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// `openai-compatible` or `replay`.
    pub provider: String,
    /// The model name, e.g. `deepseek-flash` or `replay:demo`.
    pub model: String,
    /// `scheme://host[:port]` only, never a path or a key.
    pub endpoint: Option<String>,
    /// True for the replay provider: output is labelled as replay everywhere.
    pub replay: bool,
}
