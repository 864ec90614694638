//! The durable records of a turn: one payload type per event kind the agent loop writes,
//! defined once and read back by every consumer through the same types.
//!
//! The loop writes each record with `Session::append`; the history projection, the CLI
//! renderer, the ACP renderer and the replay converter read them with [`Record::decode`].
//! Field names are the log format: old logs load unchanged, fields a newer dsh adds are
//! ignored, and every field added here must be optional when read (`#[serde(default)]`).
//! The turn and step markers and the tool records live with crash repair in `dsh-session`,
//! which sits below the model vocabulary; they are re-exported here so that one module names
//! the whole vocabulary.
//!
//! ```
//! use dsh_agent::record::{Chunk, Record};
//! use dsh_session::{EventType, SessionEvent};
//! use serde_json::value::RawValue;
//!
//! let event = SessionEvent {
//!     seq: 3,
//!     kind: EventType::new("assistant/chunk").unwrap(),
//!     time: 0,
//!     ignorable: false,
//!     data: RawValue::from_string(
//!         r#"{"turn":1,"step":1,"chunk":{"text_delta":"Hi"}}"#.to_owned(),
//!     )
//!     .unwrap(),
//! };
//! match Record::decode(&event).unwrap() {
//!     Record::AssistantChunk(chunk) => assert_eq!(chunk.chunk, Chunk::TextDelta("Hi".into())),
//!     other => panic!("{other:?}"),
//! }
//! ```

use dsh_llm::{FinishReason, Message, ToolCall, Usage};
use dsh_session::{EventType, SessionEvent, SessionId};
use serde::{Deserialize, Serialize};

use crate::message::UserMessage;

pub use crate::compacted::{
    CONTEXT_COMPACTED, CONTEXT_COMPACTING, CompactTrigger, CompactedRecord, CompactingRecord,
    CompactingState, SUMMARY_PREFIX,
};
pub use crate::config::{CONFIG_CHANGED, ConfigChangedRecord};
pub use crate::instructions::{
    Environment, GitState, InstructionSource, InstructionsRecord, SourceKind,
};
pub use dsh_session::{
    SESSION_TITLE, StepMark, TitleRecord, TitleSource, ToolCallRecord, ToolResultRecord, TurnEnd,
    TurnStart,
};
pub use dsh_tools::{PlanEntry, PlanStatus};

/// The kind of [`InstructionsRecord`]. Ignorable: a dsh that predates it loads the log and
/// simply sends no system text.
pub const CONTEXT_INSTRUCTIONS: &str = "context/instructions";

/// `user/message`: a message the turn claimed at the start of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessageRecord {
    /// The turn number.
    pub turn: u32,
    /// The step that claimed it.
    pub step: u32,
    /// The message as it was accepted.
    pub message: UserMessage,
}

/// One streamed piece of the model's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chunk {
    /// A piece of reasoning.
    ReasoningDelta(String),
    /// A piece of visible text.
    TextDelta(String),
}

impl Chunk {
    /// The piece's text, whichever kind it is.
    pub fn text(&self) -> &str {
        match self {
            Chunk::ReasoningDelta(text) | Chunk::TextDelta(text) => text,
        }
    }
}

/// `assistant/chunk`: one streamed piece, written as it arrives (never model-visible: the
/// step's `assistant/message` is).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantChunkRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The piece.
    pub chunk: Chunk,
}

/// The role tag of an assistant reply: always `"assistant"`, so a reply reads as the
/// model seam's `Message::Assistant`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssistantRole {
    /// The only role a reply has.
    #[default]
    Assistant,
}

/// What the model answered in one step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantReply {
    /// Always `assistant` (the log stores the reply as a tagged model message).
    #[serde(default)]
    pub role: AssistantRole,
    /// The visible text.
    #[serde(default)]
    pub content: String,
    /// The reasoning, when the model produced any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// The tools the model asked for (none in an interrupted or truncated reply).
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

impl AssistantReply {
    /// Whether the reply holds nothing the model could be shown: no text, no reasoning and
    /// no calls (whitespace counts as nothing).
    pub fn is_empty(&self) -> bool {
        self.content.trim().is_empty()
            && self
                .reasoning
                .as_deref()
                .is_none_or(|r| r.trim().is_empty())
            && self.tool_calls.is_empty()
    }

    /// The reply as a model message.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// `assistant/message`: the step's whole answer, written once the stream finished, failed or
/// was cancelled (then `interrupted`, and only when something was streamed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessageRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The answer.
    pub message: AssistantReply,
    /// The model that answered (`replay:<script>` for the replay model).
    #[serde(default)]
    pub model: String,
    /// Why the stream finished; absent when it did not (an interrupted reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
    /// The server's token accounting, when it reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How full the context was after this call, against the window then configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// The stream was cut short (cancel or failure): what the user already saw is kept, and
    /// no tool call of it ever runs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub interrupted: bool,
}

/// How much of the model's context a call used: what the server reported (prompt and
/// completion tokens), or an estimate from the bytes sent and received (four bytes a token)
/// when it reported nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// Tokens in the context after the call: the prompt and the answer.
    pub used: u64,
    /// The context window, in tokens.
    pub window: u64,
    /// `used` is an estimate: the server reported no usage.
    #[serde(default, skip_serializing_if = "is_false")]
    pub estimated: bool,
}

impl ContextUsage {
    /// Bytes a token is taken to be when a server reports no usage.
    pub const BYTES_PER_TOKEN: u64 = 4;
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The kind of [`PlanRecord`]. Ignorable: an older dsh shows the todo tool's result alone.
pub const PLAN_UPDATED: &str = "plan/updated";

/// `plan/updated`: the session's plan from here on, as a tool call replaced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The call that wrote it.
    pub call_id: String,
    /// The whole plan, in order.
    pub entries: Vec<PlanEntry>,
}

/// The kind of [`PermissionRuleRecord`]. Ignorable: an older dsh loads the log without it.
pub const PERMISSION_RULE: &str = "permission/rule";

/// `permission/rule`: the user answered "always" to a call, and this allow rule is
/// remembered for the project from here on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRuleRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The call the answer was about.
    pub call_id: String,
    /// The rule, in the configuration's pattern language.
    pub rule: String,
    /// The project it is remembered for; `None` when it could not be stored (it then holds
    /// for this session only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// The kind of [`SubagentRecord`]. Ignorable: an older dsh loads the log without it.
pub const AGENT_SUBAGENT: &str = "agent/subagent";

/// `agent/subagent`: a call of this session started a child agent, or the child's turn
/// ended. The child's own log holds its work; its header names this session and the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The call that started it.
    pub call_id: String,
    /// The child's session.
    pub child: SessionId,
    /// Started or finished.
    #[serde(flatten)]
    pub phase: SubagentPhase,
}

/// What a [`SubagentRecord`] says happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum SubagentPhase {
    /// The child was started for this task.
    Started {
        /// The task in a few words.
        description: String,
    },
    /// The child's turn ended.
    Finished {
        /// How, in words (`completed`, `cancelled (with its parent)` …).
        outcome: String,
        /// Whether that is an error for the caller.
        failed: bool,
        /// The head of its answer, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
    },
}

/// The kind of [`HookRanRecord`]. Ignorable: an older dsh loads the log without it.
pub const HOOK_RAN: &str = "hook/ran";

/// `hook/ran`: one of the user's hook commands ran at one of the agent's seams.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRanRecord {
    /// The turn it ran in, when it ran in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The event (`PreToolUse` …).
    pub event: String,
    /// The command, as configured.
    pub command: String,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How long it ran, in milliseconds.
    pub elapsed_ms: u64,
    /// What it decided: `blocked`, `denied`, `asked`, `allowed`, `failed` or `ok`.
    pub decision: String,
    /// Its failure in words (`the hook `x` exited 1: …`), when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The kind of [`ToolProgressRecord`], an ephemeral notice (never in the log).
pub const TOOL_PROGRESS: &str = "tool/progress";

/// `tool/progress`: output a running call produced, for the people watching. Ephemeral
/// ([`dsh_session::Ephemeral`]): observers get it in order with the events — every piece of
/// a call before its `tool/result` — and the log never holds it; the result holds what the
/// model sees.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolProgressRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The model's id of the call.
    pub call_id: String,
    /// The text produced since the last piece (pieces may be coalesced).
    pub output: String,
}

impl ToolProgressRecord {
    /// `note` read as tool progress, when it is some.
    pub fn decode(note: &dsh_session::Ephemeral) -> Option<ToolProgressRecord> {
        if note.kind.as_str() != TOOL_PROGRESS {
            return None;
        }
        serde_json::from_str(note.data.get()).ok()
    }
}

/// The kind of [`ModelProgressRecord`], an ephemeral notice (never in the log).
pub const MODEL_PROGRESS: &str = "model/progress";

/// `model/progress`: how far the model's answer has come while it writes tool calls, which
/// stream no text a person would see: a model writing hundreds of calls is visibly busy, not
/// silent. Ephemeral, like [`ToolProgressRecord`]; the `assistant/message` holds the calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelProgressRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// Calls begun so far in this answer.
    pub tool_calls: u32,
    /// Bytes of their arguments so far.
    pub argument_bytes: u64,
    /// The tool of the latest call.
    pub tool: String,
}

impl ModelProgressRecord {
    /// `note` read as model progress, when it is some.
    pub fn decode(note: &dsh_session::Ephemeral) -> Option<ModelProgressRecord> {
        if note.kind.as_str() != MODEL_PROGRESS {
            return None;
        }
        serde_json::from_str(note.data.get()).ok()
    }
}

/// One event of a session log, as the agent vocabulary reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// `turn/start`.
    TurnStart(TurnStart),
    /// `turn/end`.
    TurnEnd(TurnEnd),
    /// `step/start`.
    StepStart(StepMark),
    /// `step/end`.
    StepEnd(StepMark),
    /// `user/message`.
    UserMessage(UserMessageRecord),
    /// `assistant/chunk`.
    AssistantChunk(AssistantChunkRecord),
    /// `assistant/message`.
    AssistantMessage(AssistantMessageRecord),
    /// `tool/call`.
    ToolCall(ToolCallRecord),
    /// `tool/result`.
    ToolResult(ToolResultRecord),
    /// `context/instructions`.
    Instructions(InstructionsRecord),
    /// `context/compacted`.
    Compacted(CompactedRecord),
    /// `session/title`.
    Title(TitleRecord),
    /// `config/changed`.
    ConfigChanged(ConfigChangedRecord),
    /// `plan/updated`.
    Plan(PlanRecord),
    /// `permission/rule`.
    PermissionRule(PermissionRuleRecord),
    /// `agent/subagent`.
    Subagent(SubagentRecord),
    /// `hook/ran`.
    HookRan(HookRanRecord),
    /// A kind outside this vocabulary (a plugin's, or an ignorable one of a newer dsh): its
    /// payload stays opaque.
    Other,
}

/// A record whose payload does not fit its kind's type.
#[derive(Debug, thiserror::Error)]
#[error("event {seq} ({kind}) does not hold a valid record: {source}")]
pub struct RecordError {
    /// The event's seq.
    pub seq: u64,
    /// The event's kind.
    pub kind: EventType,
    /// What did not fit.
    #[source]
    pub source: serde_json::Error,
}

impl Record {
    /// Reads `event`'s payload as the type of its kind.
    pub fn decode(event: &SessionEvent) -> Result<Record, RecordError> {
        let data = event.data.get();
        let parsed = match event.kind.as_str() {
            EventType::TURN_START => serde_json::from_str(data).map(Record::TurnStart),
            EventType::TURN_END => serde_json::from_str(data).map(Record::TurnEnd),
            EventType::STEP_START => serde_json::from_str(data).map(Record::StepStart),
            EventType::STEP_END => serde_json::from_str(data).map(Record::StepEnd),
            EventType::USER_MESSAGE => serde_json::from_str(data).map(Record::UserMessage),
            EventType::ASSISTANT_CHUNK => serde_json::from_str(data).map(Record::AssistantChunk),
            EventType::ASSISTANT_MESSAGE => {
                serde_json::from_str(data).map(Record::AssistantMessage)
            }
            EventType::TOOL_CALL => serde_json::from_str(data).map(Record::ToolCall),
            EventType::TOOL_RESULT => serde_json::from_str(data).map(Record::ToolResult),
            CONTEXT_INSTRUCTIONS => serde_json::from_str(data).map(Record::Instructions),
            CONTEXT_COMPACTED => serde_json::from_str(data).map(Record::Compacted),
            SESSION_TITLE => serde_json::from_str(data).map(Record::Title),
            CONFIG_CHANGED => serde_json::from_str(data).map(Record::ConfigChanged),
            PLAN_UPDATED => serde_json::from_str(data).map(Record::Plan),
            PERMISSION_RULE => serde_json::from_str(data).map(Record::PermissionRule),
            AGENT_SUBAGENT => serde_json::from_str(data).map(Record::Subagent),
            HOOK_RAN => serde_json::from_str(data).map(Record::HookRan),
            _ => Ok(Record::Other),
        };
        parsed.map_err(|source| RecordError {
            seq: event.seq,
            kind: event.kind.clone(),
            source,
        })
    }

    /// The turn the record belongs to, for the kinds that carry one.
    pub fn turn(&self) -> Option<u32> {
        match self {
            Record::TurnStart(TurnStart { turn })
            | Record::TurnEnd(TurnEnd { turn, .. })
            | Record::StepStart(StepMark { turn, .. })
            | Record::StepEnd(StepMark { turn, .. })
            | Record::UserMessage(UserMessageRecord { turn, .. })
            | Record::AssistantChunk(AssistantChunkRecord { turn, .. })
            | Record::AssistantMessage(AssistantMessageRecord { turn, .. })
            | Record::ToolCall(ToolCallRecord { turn, .. })
            | Record::ToolResult(ToolResultRecord { turn, .. })
            | Record::Compacted(CompactedRecord { turn, .. })
            | Record::Plan(PlanRecord { turn, .. })
            | Record::PermissionRule(PermissionRuleRecord { turn, .. })
            | Record::Subagent(SubagentRecord { turn, .. }) => Some(*turn),
            Record::HookRan(HookRanRecord { turn, .. }) => *turn,
            Record::Instructions(_)
            | Record::Title(_)
            | Record::ConfigChanged(_)
            | Record::Other => None,
        }
    }
}
