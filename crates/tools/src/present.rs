//! Presentation vocabulary: how a front end may show a call and its result. Front ends map
//! these to their own protocol; this crate names none.

use std::path::PathBuf;

use serde_json::Value;

/// How to show a call.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolCallView {
    /// A titled card.
    Generic {
        /// A one-line title.
        title: String,
        /// The call's input in a few words, after the tool's name (`src/main.rs`,
        /// `fn main in src`); `None` shows the arguments as given.
        summary: Option<String>,
        /// What kind of action it is.
        kind: ToolKindHint,
        /// The arguments as given.
        raw_input: Value,
        /// Text blocks to show.
        content: Vec<String>,
        /// Files it touches, with the line it is at when known (an editor follows it).
        locations: Vec<Location>,
    },
    /// A terminal running a command.
    Terminal {
        /// The command line.
        command: String,
        /// What the command is for.
        description: Option<String>,
        /// Where it runs.
        cwd: Option<PathBuf>,
        /// The arguments as given.
        raw_input: Value,
    },
}

/// A place in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file, absolute or relative to the session's cwd.
    pub path: PathBuf,
    /// The 1-based line, when the call is about one.
    pub line: Option<u32>,
}

impl Location {
    /// The file `path`, no line.
    pub fn file(path: impl Into<PathBuf>) -> Location {
        Location {
            path: path.into(),
            line: None,
        }
    }
}

/// How to show a result.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolResultView {
    /// Text blocks.
    Generic {
        /// The blocks.
        content: Vec<String>,
        /// What the result says in one line (`read a.rs: 40 lines`, `grep x: 3 matches`),
        /// for a front end that shows the line instead of the blocks.
        summary: Option<String>,
    },
    /// A change to one file: the changed region before and after (with a few lines of
    /// context around it, not necessarily the whole file).
    Diff {
        /// The file.
        path: PathBuf,
        /// The region before the change; empty for a new file.
        old_text: String,
        /// The region after it.
        new_text: String,
        /// The 1-based line the region starts at.
        first_line: u32,
        /// The file did not exist before: a creation, not a change.
        created: bool,
        /// One line saying what changed ("2 replacements", "created, 40 lines").
        summary: String,
    },
    /// A terminal's output and how it exited.
    Terminal {
        /// The output, without status markers.
        output: String,
        /// The exit.
        exit: TerminalExit,
    },
}

impl ToolCallView {
    /// A titled card for `call`, with its arguments as the model sent them.
    pub fn titled(
        title: impl Into<String>,
        kind: ToolKindHint,
        call: &dsh_session::ToolCallRecord,
    ) -> ToolCallView {
        ToolCallView::Generic {
            title: title.into(),
            summary: None,
            kind,
            raw_input: serde_json::from_str(&call.arguments).unwrap_or(Value::Null),
            content: Vec::new(),
            locations: Vec::new(),
        }
    }
}

/// How a command ended, taken from structured result data, never parsed out of text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerminalExit {
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal's name, when one killed it.
    pub signal: Option<String>,
    /// It ran out of time and was stopped.
    pub timed_out: bool,
    /// The tool's own words when the command ended some other way (`[cancelled by the user
    /// after 5.2 s; the command was stopped]`).
    pub note: Option<String>,
}

/// What kind of action a call is, for icons and grouping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKindHint {
    /// Reads files or data.
    Read,
    /// Changes files.
    Edit,
    /// Removes files.
    Delete,
    /// Moves or renames.
    Move,
    /// Searches.
    Search,
    /// Runs something.
    Execute,
    /// Thinks aloud.
    Think,
    /// Fetches from elsewhere.
    Fetch,
    /// Updates the session's plan: its result is the plan record that follows, which a
    /// front end may show instead of the call.
    Plan,
    /// Anything else.
    Other,
}
