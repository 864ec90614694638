//! The core payloads dsh-session interprets. Field names are fixed: the agent writes
//! these structs, and crash repair reads them back.

use serde::{Deserialize, Serialize};

/// `turn/start`: `{"turn": n}`, n ≥ 1 and increasing per session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStart {
    /// The turn number.
    pub turn: u32,
}

/// `turn/end`: `{"turn": n, "reason": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// The turn number.
    pub turn: u32,
    /// Why the turn ended.
    pub reason: TurnEndReason,
}

/// `step/start` and `step/end`: `{"turn": n, "step": m}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepMark {
    /// The turn number.
    pub turn: u32,
    /// The step number within the turn, from 1.
    pub step: u32,
}

/// `tool/call`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The model's id of the call.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model sent them (a JSON string).
    pub arguments: String,
}

/// `tool/result`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The call this answers.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model sees.
    pub content: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// A lowercase snake_case machine code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Structured tool output, such as an exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
    /// The seq of the call's `tool/call` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_seq: Option<u64>,
}

/// Why a turn ended. When each is written is the agent loop's concern; `Interrupted` is written only by
/// crash repair.
///
/// Not `#[non_exhaustive]`: every table over it (an ACP stop reason, an exit status) is an
/// exhaustive match, so a new kind breaks their build instead of silently becoming "internal".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnEndReason {
    /// The model stopped on its own.
    Completed,
    /// The model hit its output limit.
    MaxTokens,
    /// The loop hit its step limit.
    MaxSteps,
    /// The model made the same call again after it was told that repeating it would not
    /// run: the loop stopped feeding a model that goes in circles.
    RepeatedCall {
        /// The tool it kept calling.
        tool: String,
    },
    /// The model refused.
    Refusal,
    /// The turn was cancelled; the first cause requested.
    Aborted {
        /// Who asked.
        cause: CancelCause,
    },
    /// The turn failed.
    Error {
        /// What failed.
        failure: Failure,
    },
    /// The process died mid-turn; written by crash repair only.
    Interrupted,
    /// A kind written by a newer dsh; never written.
    #[serde(other)]
    Unknown,
}

impl TurnEndReason {
    /// The `kind` the log spells this reason with (`max_tokens`, `aborted`, …; `unknown` for a
    /// kind of a newer dsh).
    pub fn kind(&self) -> &'static str {
        match self {
            TurnEndReason::Completed => "completed",
            TurnEndReason::MaxTokens => "max_tokens",
            TurnEndReason::MaxSteps => "max_steps",
            TurnEndReason::RepeatedCall { .. } => "repeated_call",
            TurnEndReason::Refusal => "refusal",
            TurnEndReason::Aborted { .. } => "aborted",
            TurnEndReason::Error { .. } => "error",
            TurnEndReason::Interrupted => "interrupted",
            TurnEndReason::Unknown => "unknown",
        }
    }
}

/// Who cancelled a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelCause {
    /// The user (an editor's cancel, Ctrl-C).
    User,
    /// A parent agent.
    Parent,
    /// Teardown of the agent.
    Disposed,
}

/// A failure carried by a turn end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// A lowercase snake_case machine code: one of [`crate::failure_code`], or a model error
    /// kind's code (`auth`, `rate_limited`, … from the model seam).
    pub code: String,
    /// What happened, for people.
    pub message: String,
    /// The HTTP status, when a server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The server's request id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl Failure {
    /// A failure with a code and a message, nothing else.
    pub fn new(code: &str, message: impl Into<String>) -> Failure {
        Failure {
            code: code.to_owned(),
            message: message.into(),
            status: None,
            request_id: None,
        }
    }
}
