//! `context/compacted`: the point where a session's earlier history was replaced, for the
//! model, by a summary. The log keeps everything; only the model's history starts again here.

use serde::{Deserialize, Serialize};

/// The kind of [`CompactedRecord`]. Ignorable: a dsh that predates it loads the log and sends
/// the whole history.
pub const CONTEXT_COMPACTED: &str = "context/compacted";

/// What opens the model's history after a compaction, so the model knows it reads a summary
/// rather than the conversation itself.
pub const SUMMARY_PREFIX: &str = "[dsh: the conversation so far was compacted. This is its summary, written for you to continue the work; the user's latest messages follow it verbatim.]";

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactTrigger {
    /// The context reached the configured share of the window.
    Auto,
    /// The user asked (`--compact`, `/compact`).
    Manual,
    /// The server refused a request as too long.
    Overflow,
}

/// `context/compacted`: the summary that stands for every event before it, and the user
/// messages kept word for word.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactedRecord {
    /// The turn it was made in.
    #[serde(default)]
    pub turn: u32,
    /// The step it was made in.
    #[serde(default)]
    pub step: u32,
    /// The handoff summary the model wrote.
    pub summary: String,
    /// The last seq the summary stands for.
    pub through_seq: u64,
    /// The most recent user messages, oldest first, kept verbatim.
    #[serde(default)]
    pub kept: Vec<String>,
    /// Files the summarised calls read, from the calls themselves.
    #[serde(default)]
    pub files_read: Vec<String>,
    /// Files the summarised calls changed.
    #[serde(default)]
    pub files_modified: Vec<String>,
    /// Context tokens before the compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// Context tokens after it, estimated from the bytes of the history it leaves (the
    /// system text and [`CompactedRecord::opening`]); 0 in records that predate the field.
    #[serde(default)]
    pub tokens_after: u64,
    /// What started it.
    pub trigger: CompactTrigger,
    /// The server's token accounting of the summary request, when it reported one: a model
    /// call like any other, counted in the session's totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<dsh_llm::Usage>,
}

impl CompactedRecord {
    /// The text that opens the model's history from here: the prefix, the summary, and the
    /// kept user messages.
    pub fn opening(&self) -> String {
        let mut text = format!("{SUMMARY_PREFIX}\n\n{}", self.summary.trim());
        for message in &self.kept {
            text.push_str("\n\n");
            text.push_str(message);
        }
        text
    }
}

/// The kind of [`CompactingRecord`], an ephemeral notice (never in the log).
pub const CONTEXT_COMPACTING: &str = "context/compacting";

/// `context/compacting`: a compaction started, or ended without a record. Ephemeral
/// ([`dsh_session::Ephemeral`]): it lets the people watching see the summary being written,
/// which takes as long as a model answer; a finished compaction is the durable
/// [`CompactedRecord`] that follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactingRecord {
    /// The turn number.
    pub turn: u32,
    /// The step number.
    pub step: u32,
    /// The last seq the summary will stand for: with the session, it names the compaction,
    /// and its [`CompactedRecord`] carries the same.
    pub through_seq: u64,
    /// The id the compaction was asked for under (`Agent::compact`); none when dsh started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<crate::message::MessageId>,
    /// What started it.
    pub trigger: CompactTrigger,
    /// Where it stands.
    #[serde(flatten)]
    pub state: CompactingState,
}

/// Where a compaction stands, as `context/compacting` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CompactingState {
    /// The summary is being asked for.
    Started,
    /// No summary came back; the history is unchanged.
    Failed {
        /// Why, for people.
        message: String,
    },
    /// The turn was cancelled meanwhile.
    Cancelled,
}

impl CompactingRecord {
    /// `note` read as a compaction notice, when it is one.
    pub fn decode(note: &dsh_session::Ephemeral) -> Option<CompactingRecord> {
        if note.kind.as_str() != CONTEXT_COMPACTING {
            return None;
        }
        serde_json::from_str(note.data.get()).ok()
    }
}
