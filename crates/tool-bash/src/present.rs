//! Presenters: pure functions of the persisted call and result (arguments, content, error
//! flag, `meta`), so a live session and a replay render alike. Exit data comes from `meta`,
//! never from the text.

use std::path::PathBuf;

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::{TerminalExit, ToolCallView, ToolKindHint, ToolResultView};
use serde_json::Value;

use crate::render::{NO_OUTPUT, STRAGGLER_NOTE};

fn arguments(call: &ToolCallRecord) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
}

fn background(args: &Value) -> bool {
    args.get("run_in_background").and_then(Value::as_bool) == Some(true)
}

pub fn bash_call(call: &ToolCallRecord) -> Option<ToolCallView> {
    let args = arguments(call);
    let command = args.get("command").and_then(Value::as_str)?.to_owned();
    if background(&args) {
        return Some(ToolCallView::Generic {
            summary: Some(command.clone()),
            title: command,
            kind: ToolKindHint::Execute,
            raw_input: args,
            content: Vec::new(),
            locations: Vec::new(),
        });
    }
    let description = args.get("description").and_then(Value::as_str);
    // Leaving the sandbox is said first: it is what the user is asked about.
    let leaving = args
        .get("outside_sandbox")
        .and_then(Value::as_str)
        .map(|reason| format!("outside the sandbox: {reason}"));
    let description = match (leaving, description) {
        (Some(leaving), Some(description)) => Some(format!("{leaving} · {description}")),
        (Some(leaving), None) => Some(leaving),
        (None, description) => description.map(str::to_owned),
    };
    Some(ToolCallView::Terminal {
        description,
        cwd: args
            .get("workdir")
            .and_then(Value::as_str)
            .map(PathBuf::from),
        command,
        raw_input: args,
    })
}

pub fn bash_result(call: &ToolCallRecord, result: &ToolResultRecord) -> Option<ToolResultView> {
    // Most calls are not in the background: their arguments need no second parse to say so.
    if call.arguments.contains("run_in_background") && background(&arguments(call)) {
        return generic_result(result);
    }
    if result.is_error {
        return stopped_result(result);
    }
    let meta = result.meta.as_ref()?;
    meta.get("exit_code")?;
    // The output without status markers: the final phrase line and the straggler note.
    let body = result
        .content
        .rsplit_once('\n')
        .map_or("", |(body, _phrase)| body);
    let (body, stragglers) = match body.strip_suffix(STRAGGLER_NOTE) {
        Some(rest) if rest.is_empty() || rest.ends_with('\n') => {
            (rest.strip_suffix('\n').unwrap_or(rest), true)
        }
        Some(_) | None => (body, false),
    };
    // A command that printed nothing says so to the model; a terminal shows nothing.
    let output = match body {
        "" | NO_OUTPUT => String::new(),
        body => format!("{body}\n"),
    };
    Some(ToolResultView::Terminal {
        output,
        exit: TerminalExit {
            exit_code: meta
                .get("exit_code")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok()),
            signal: meta
                .get("signal")
                .and_then(Value::as_str)
                .map(str::to_owned),
            timed_out: meta.get("timed_out").and_then(Value::as_bool) == Some(true),
            note: stragglers.then(|| STRAGGLER_NOTE.to_owned()),
        },
    })
}

/// A command that did not end by itself (cancelled by the user): what it printed, and the
/// bracketed line this tool ended the text with, as the terminal's note.
fn stopped_result(result: &ToolResultRecord) -> Option<ToolResultView> {
    let content = result.content.as_str();
    let (output, last) = match content.rsplit_once('\n') {
        Some((output, last)) => (format!("{output}\n"), last),
        None => (String::new(), content),
    };
    if !(last.starts_with('[') && last.ends_with(']')) {
        return generic_result(result);
    }
    Some(ToolResultView::Terminal {
        output,
        exit: TerminalExit {
            note: Some(last.to_owned()),
            ..TerminalExit::default()
        },
    })
}

pub fn task_call(call: &ToolCallRecord, title: &str, kind: ToolKindHint) -> Option<ToolCallView> {
    let args = arguments(call);
    let id = args
        .get("task_id")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    Some(ToolCallView::Generic {
        title: format!("{title} {id}"),
        summary: Some(id),
        kind,
        raw_input: args,
        content: Vec::new(),
        locations: Vec::new(),
    })
}

pub fn generic_result(result: &ToolResultRecord) -> Option<ToolResultView> {
    Some(ToolResultView::Generic {
        content: vec![result.content.clone()],
        summary: None,
    })
}
