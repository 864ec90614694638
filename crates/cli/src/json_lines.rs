//! `dsh run --json`: every kind of line it prints, as one type. The schema a consumer reads
//! is `docs/run-json.schema.json`; a test holds real output to it. Fields are only ever
//! added; the `session` line, always the first, says which schema version the lines follow.

use dsh_agent::record::{CompactTrigger, PlanEntry};
use dsh_llm::ModelInfo;
use dsh_session::{CancelCause, Failure};
use serde::Serialize;
use serde_json::Value;

/// The schema version the `session` line announces.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of `dsh run --json`.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line<'a> {
    /// The first line: the session, the model and where the log is.
    Session {
        schema_version: u32,
        session_id: String,
        resumed: bool,
        model: Option<ModelInfo>,
        data_dir: Option<String>,
        path: Option<String>,
    },
    /// A child agent (a subagent) began, started by the call `call_id`; the lines of its
    /// work that follow carry its `session_id`.
    Subagent {
        session_id: &'a str,
        parent_id: &'a str,
        call_id: &'a str,
        title: &'a str,
    },
    /// A turn began.
    TurnStart { turn: u32 },
    /// A piece of the model's reasoning.
    Reasoning { text: &'a str },
    /// A piece of the model's answer.
    Text { text: &'a str },
    /// The model asked for a call.
    ToolCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
        title: &'a str,
    },
    /// A running call's output as it arrives (not in the log).
    ToolOutput { call_id: &'a str, output: &'a str },
    /// A call's result, as the model got it.
    ToolResult {
        call_id: &'a str,
        name: &'a str,
        is_error: bool,
        output: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error_code: Option<&'a str>,
        /// Present for a command: its exit code, or null when a signal ended it.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<Option<i32>>,
    },
    /// One finished model call's usage.
    Usage {
        step: u32,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        cache_hit_tokens: Option<u64>,
        cache_miss_tokens: Option<u64>,
        reasoning_tokens: Option<u64>,
        context_used: Option<u64>,
        context_window: Option<u64>,
        estimated: bool,
    },
    /// One finished model call's whole answer.
    Message { step: u32, text: &'a str },
    /// The model's history continues from a summary.
    Compacted {
        trigger: CompactTrigger,
        tokens_before: u64,
        tokens_after: u64,
        input_tokens: Option<u64>,
        output_tokens: Option<u64>,
        summary: &'a str,
        files_read: &'a [String],
        files_modified: &'a [String],
    },
    /// The plan, whole.
    Plan { step: u32, entries: &'a [PlanEntry] },
    /// The model is still writing tool calls.
    Progress {
        step: u32,
        tool_calls: u32,
        argument_bytes: u64,
        tool: &'a str,
    },
    /// The last line of a turn that ran.
    TurnEnd {
        turn: Option<u32>,
        reason: &'a str,
        answered: Option<bool>,
        steps: u32,
        usage: Totals,
        #[serde(skip_serializing_if = "Option::is_none")]
        cause: Option<CancelCause>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a Failure>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool: Option<&'a str>,
    },
    /// The last line of a run that failed before a turn.
    Error { code: &'a str, message: &'a str },
}

/// A turn's token totals.
#[derive(Debug, Serialize)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_hit_tokens: u64,
}

impl Line<'_> {
    /// The line, newline-terminated.
    /// The line of a child agent's work: [`Line::text`] naming its session, or the line
    /// itself when `session` is `None`.
    pub fn text_in(&self, session: Option<&str>) -> String {
        let Some(session) = session else {
            return self.text();
        };
        match serde_json::to_value(self) {
            Ok(Value::Object(mut fields)) => {
                fields.insert("session_id".into(), Value::String(session.to_owned()));
                let mut line = Value::Object(fields).to_string();
                line.push('\n');
                line
            }
            Ok(_) | Err(_) => self.text(),
        }
    }

    pub fn text(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_else(|e| {
            // Only a map with non-string keys fails to serialize: never one of these.
            let message = Value::String(e.to_string());
            format!(r#"{{"type":"error","code":"internal","message":{message}}}"#)
        });
        line.push('\n');
        line
    }
}
