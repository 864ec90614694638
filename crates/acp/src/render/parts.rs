//! Building blocks of updates: chunks, tool kinds, terminal metadata, fenced output.

use dsh_tools::safe_text::SafeText;
use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{ContentBlock, ContentChunk, Meta, SessionUpdate, ToolKind};
use dsh_tools::ToolKindHint;
use serde_json::{Value, json};

use super::OUTPUT_LIMIT;

pub(super) fn thought(text: String) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text)))
}

pub(super) fn message(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

pub(super) fn tool_kind(hint: ToolKindHint) -> ToolKind {
    match hint {
        ToolKindHint::Read => ToolKind::Read,
        ToolKindHint::Edit => ToolKind::Edit,
        ToolKindHint::Delete => ToolKind::Delete,
        ToolKindHint::Move => ToolKind::Move,
        ToolKindHint::Search => ToolKind::Search,
        ToolKindHint::Execute => ToolKind::Execute,
        ToolKindHint::Think | ToolKindHint::Plan => ToolKind::Think,
        ToolKindHint::Fetch => ToolKind::Fetch,
        ToolKindHint::Other => ToolKind::Other,
    }
}

pub(super) fn absolute(cwd: &Path, path: PathBuf) -> PathBuf {
    if path.is_relative() {
        cwd.join(path)
    } else {
        path
    }
}

pub(super) fn meta_of(value: Value) -> Meta {
    match value {
        Value::Object(map) => map,
        _ => Meta::new(),
    }
}

pub(super) fn exit_meta(id: &str, exit_code: Option<i32>, signal: Option<&str>) -> Meta {
    meta_of(json!({
        "terminal_exit": {"terminal_id": id, "exit_code": exit_code, "signal": signal}
    }))
}

/// Output cut to the frame budget, with a marker saying how much was left out.
pub(super) fn cap(text: &str) -> String {
    if text.len() <= OUTPUT_LIMIT {
        return text.to_owned();
    }
    let mut end = OUTPUT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… [{} more bytes not shown]",
        &text[..end],
        text.len() - end
    )
}

/// Outside text as Markdown content: capped, and stripped of every escape sequence and
/// control but newline and tab, as a terminal would need ([`SafeText`]); only a terminal
/// card's raw output keeps its bytes, for the client's terminal emulator.
pub(super) fn shown(text: &str) -> String {
    SafeText::plain(&cap(text))
}

/// Text-mode terminal output: a `console` fence one backtick longer than any run of
/// backticks in the output, then the exit status when it was not a clean exit.
pub(super) fn console(output: &str, exit_code: Option<i32>, signal: Option<&str>) -> String {
    let output = shown(output);
    let longest = output.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = if output.is_empty() {
        "(no output)".to_owned()
    } else {
        output.trim_end_matches('\n').to_owned()
    };
    let mut text = format!("{fence}console\n{body}\n{fence}");
    match (exit_code, signal) {
        (_, Some(signal)) => text.push_str(&format!("\nterminated by signal: {signal}")),
        (Some(code), None) if code != 0 => text.push_str(&format!("\nexit code: {code}")),
        _ => {}
    }
    text
}
