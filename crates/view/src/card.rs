//! A tool call as a card: how it opens (the tool's own title, kind, places and look) and how
//! it closes (the tool's own view of its result).

use std::path::PathBuf;
use std::sync::Arc;

use dsh_session::ToolCallRecord;
use dsh_tools::{Location, ToolKindHint, ToolResultView};
use serde_json::Value;

/// A call the model asked for, as the tool presents it.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    /// Unique in its session and stable across a replay: `<turn>:<step>:<call id>`, then
    /// `:2`, `:3` … when a step repeats a call id.
    pub id: String,
    /// The call as it was recorded: its turn, step, id, name and arguments, raw (for
    /// matching and for data, not for showing).
    pub call: ToolCallRecord,
    /// The tool's name, safe.
    pub name: String,
    /// A one-line title, safe.
    pub title: String,
    /// What kind of action it is.
    pub kind: ToolKindHint,
    /// How it looks.
    pub look: Look,
    /// Files it touches, as the tool gave them (relative ones are the session's).
    pub locations: Vec<Location>,
    /// The arguments as JSON, or as a string when they are not JSON. Raw.
    pub raw_input: Value,
    /// When the call was recorded, in epoch milliseconds.
    pub opened_at: i64,
}

/// How a card looks.
#[derive(Clone, Debug, PartialEq)]
pub enum Look {
    /// A command running in a terminal.
    Terminal {
        /// The command line, safe.
        command: String,
        /// What it is for, in the model's words, safe.
        description: Option<String>,
        /// Where it runs, when not in the session's directory.
        cwd: Option<PathBuf>,
    },
    /// Anything else.
    Generic {
        /// The input in a few words (`src/main.rs`), safe; `None` when the tool gives none.
        summary: Option<String>,
        /// Text blocks to show with it, safe.
        content: Vec<String>,
    },
}

/// A call that ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Closed {
    /// The card, as it was opened.
    pub card: Arc<Card>,
    /// How it ended.
    pub end: CardEnd,
    /// From the call's record to its result's, when both were recorded.
    pub elapsed_ms: Option<i64>,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum CardEnd {
    /// It returned a result.
    Completed {
        /// The result as the model got it. Raw.
        content: String,
        /// How the tool shows it (its text, when the tool has no view of its own).
        shown: ToolResultView,
    },
    /// It failed, was refused or cancelled.
    Failed {
        /// The error as the model got it. Raw.
        content: String,
        /// Its result code (`cancelled`, `not_found`), when it has one.
        code: Option<String>,
        /// How the tool shows it, when it has a view of its own (what a stopped command
        /// printed before it was stopped).
        shown: Option<ToolResultView>,
    },
    /// Its turn ended, or the view closed, before any result was recorded.
    Abandoned,
}

impl CardEnd {
    /// It failed, or never ended.
    pub fn failed(&self) -> bool {
        match self {
            CardEnd::Completed { .. } => false,
            CardEnd::Failed { .. } | CardEnd::Abandoned => true,
        }
    }
}
