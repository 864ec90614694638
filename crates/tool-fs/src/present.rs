//! Presenters: pure functions of the persisted call and result, so a live session and a
//! replay render alike. The changed region of an edit comes from the result's `meta`.

use std::path::PathBuf;

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::{Location, ToolCallView, ToolKindHint, ToolResultView};
use serde_json::Value;

fn arguments(call: &ToolCallRecord) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
}

fn text<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// `read path` (lines a–b), located at its first line.
pub(crate) fn read_call(call: &ToolCallRecord) -> Option<ToolCallView> {
    let args = arguments(call);
    let path = text(&args, "path")?.to_owned();
    let offset = args.get("offset").and_then(Value::as_u64);
    let limit = args.get("limit").and_then(Value::as_u64);
    let title = match (offset, limit) {
        (Some(from), Some(n)) => {
            format!("Read {path} (lines {from}–{})", from + n.saturating_sub(1))
        }
        (Some(from), None) => format!("Read {path} (from line {from})"),
        (None, Some(n)) => format!("Read {path} (lines 1–{n})"),
        (None, None) => format!("Read {path}"),
    };
    Some(ToolCallView::Generic {
        title,
        summary: Some(path.clone()),
        kind: ToolKindHint::Read,
        raw_input: args.clone(),
        content: Vec::new(),
        locations: vec![Location {
            path: PathBuf::from(path),
            line: offset.and_then(|o| u32::try_from(o).ok()),
        }],
    })
}

/// `Edit path` / `Write path`.
pub(crate) fn change_call(call: &ToolCallRecord, verb: &str) -> Option<ToolCallView> {
    let args = arguments(call);
    let path = text(&args, "path")?.to_owned();
    Some(ToolCallView::Generic {
        title: format!("{verb} {path}"),
        summary: Some(path.clone()),
        kind: ToolKindHint::Edit,
        raw_input: args,
        content: Vec::new(),
        locations: vec![Location::file(path)],
    })
}

/// `grep pattern` or `glob pattern`, in a path when given.
pub(crate) fn search_call(call: &ToolCallRecord, verb: &str) -> Option<ToolCallView> {
    let args = arguments(call);
    let pattern = text(&args, "pattern")?;
    let summary = match text(&args, "path") {
        Some(path) => format!("{pattern} in {path}"),
        None => pattern.to_owned(),
    };
    let title = format!("{verb} {summary}");
    let locations = text(&args, "path")
        .map(|p| vec![Location::file(p)])
        .unwrap_or_default();
    Some(ToolCallView::Generic {
        title,
        summary: Some(summary),
        kind: ToolKindHint::Search,
        raw_input: args.clone(),
        content: Vec::new(),
        locations,
    })
}

/// The one-line summary a file tool's result keeps in its `meta`.
fn summary(result: &ToolResultRecord) -> Option<String> {
    let summary = result.meta.as_ref()?.get("summary")?.as_str()?;
    Some(summary.to_owned())
}

/// A read's result: its one-line summary (the file itself is for the model).
pub(crate) fn summary_result(
    _call: &ToolCallRecord,
    result: &ToolResultRecord,
) -> Option<ToolResultView> {
    let summary = summary(result)?;
    Some(ToolResultView::Generic {
        content: vec![summary.clone()],
        summary: Some(summary),
    })
}

/// A search's result: what it found, and its summary.
pub(crate) fn found_result(
    _call: &ToolCallRecord,
    result: &ToolResultRecord,
) -> Option<ToolResultView> {
    Some(ToolResultView::Generic {
        content: vec![result.content.clone()],
        summary: summary(result),
    })
}

/// An edit's or write's result: the changed region.
pub(crate) fn diff_result(
    _call: &ToolCallRecord,
    result: &ToolResultRecord,
) -> Option<ToolResultView> {
    let meta = result.meta.as_ref()?;
    Some(ToolResultView::Diff {
        path: PathBuf::from(meta.get("path")?.as_str()?),
        old_text: meta.get("old_text")?.as_str()?.to_owned(),
        new_text: meta.get("new_text")?.as_str()?.to_owned(),
        first_line: u32::try_from(meta.get("first_line")?.as_u64()?).ok()?,
        created: meta
            .get("created")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        summary: meta.get("summary")?.as_str()?.to_owned(),
    })
}
