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
    /// What started it.
    pub trigger: CompactTrigger,
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
