//! `edit`: exact replacements in a file the model has read, applied together or not at all.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_fs::{FileAccess, FsError, TextFile};
use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::json;

use crate::args::{self, EditArgs};
use crate::config::ToolFsConfig;
use crate::errors::{from_fs, invalid};
use crate::find::{apply, line_of};
use crate::ledger::Ledger;
use crate::present;
use crate::region::Region;
use crate::target::{locate, shown};
use crate::write::{check_seen, effect_of};

/// The `edit` tool.
pub(crate) struct EditTool {
    pub config: ToolFsConfig,
    pub ledger: Arc<Ledger>,
}

impl Tool for EditTool {
    fn schema(&self) -> ToolSchema {
        let one = json!({
            "old_string": {"type": "string", "description": "The exact text to replace, as in the file (without read's line numbers), with enough surrounding lines to be unique."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one."}
        });
        let mut properties = json!({
            "path": {"type": "string", "description": "The file, absolute or relative to the working directory."},
            "edits": {
                "type": "array",
                "description": "Several replacements in this file, applied in order, all or none. Instead of old_string and new_string.",
                "items": {"type": "object", "properties": one.clone(), "required": ["old_string", "new_string"], "additionalProperties": false}
            }
        });
        if let (Some(all), Some(one)) = (properties.as_object_mut(), one.as_object()) {
            all.extend(one.clone());
        }
        ToolSchema {
            name: "edit".into(),
            description: "Replace exact text in a file you have read in this session. old_string must match exactly once (or set replace_all). Several changes to one file go in one call with edits. Refused if the file changed since you read it: read it again.".into(),
            parameters: json!({
                "type": "object",
                "properties": properties,
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "edit".into()
    }

    fn effect(&self, args: &serde_json::Value, roots: &Roots) -> Effect {
        effect_of(args, roots)
    }

    fn preview(
        &self,
        args: &serde_json::Value,
        cx: &ToolContext,
    ) -> BoxFuture<'static, Option<ToolResultView>> {
        let (max, ledger, args, cx) = (
            self.config.max_write_bytes,
            self.ledger.clone(),
            args.clone(),
            cx.clone(),
        );
        Box::pin(async move {
            let plan = plan(&ledger, &cx, args, max).await.ok()?;
            // Shown before the answer: what will change, not what did.
            Some(Region::of(&plan.file.text, &plan.text, false).view(&plan.path, &plan.intent))
        })
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let max = self.config.max_write_bytes;
        let ledger = self.ledger.clone();
        Box::pin(async move {
            let plan = plan(&ledger, &cx, args, max).await?;
            let version = plan
                .files
                .write(&plan.path, &plan.text, Some(&plan.file.version))
                .await
                .map_err(|e| from_fs(&e))?;
            ledger.saw(&cx, &plan.path, version);
            let region = Region::of(&plan.file.text, &plan.text, false);
            let meta = region.meta(&plan.path, &plan.summary);
            let (first_line, new_region) = (region.first_line, &region.new_text);
            let mut content = format!("{}. The changed lines now read:\n", plan.summary);
            for (i, l) in new_region.lines().take(40).enumerate() {
                content.push_str(&format!("{:>6}\t{l}\n", first_line + i));
            }
            Ok(ToolOutput {
                content,
                is_error: false,
                meta: Some(meta),
            })
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::change_call(call, "Edit")
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::diff_result(call, result)
    }
}

/// An edit worked out in memory: the file as read and the text it becomes.
struct Plan {
    files: Arc<dyn FileAccess>,
    path: PathBuf,
    file: TextFile,
    text: String,
    /// What happened, for the result.
    summary: String,
    /// What will happen, for a question asked before.
    intent: String,
}

/// Checks the arguments and the read rule and applies the replacements in memory; writes
/// nothing.
async fn plan(
    ledger: &Ledger,
    cx: &ToolContext,
    args: serde_json::Value,
    max: usize,
) -> Result<Plan, ToolError> {
    let args: EditArgs = args::parse(args)?;
    let (path, edits) = args.replacements(max)?;
    let target = locate(cx, &path)?;
    let path = target.resolved.path;
    let name = shown(cx, &path);
    let file = target.files.read(&path).await.map_err(|e| match e {
        // A model told to look for the path goes looking; one told how to create it does.
        FsError::NotFound { .. } => ToolError::new(
            e.code(),
            format!(
                "{name} does not exist. `edit` changes existing files: to create it, call `write` with its whole content."
            ),
        ),
        other => from_fs(&other),
    })?;
    check_seen(ledger, cx, &path, &name, &file.version)?;
    let mut text = file.text.clone();
    let mut replaced = 0;
    let mut first_at = None;
    for (i, edit) in edits.iter().enumerate() {
        let which = if edits.len() > 1 {
            format!(" (edit {})", i + 1)
        } else {
            String::new()
        };
        let (next, n, at) = apply(&text, edit, &name, &which)?;
        if first_at.is_none() {
            first_at = Some(line_of(&text, at));
        }
        text = next;
        replaced += n;
    }
    let text = keep_final_newline(&file.text, text);
    if text.len() > max {
        return Err(invalid(format!(
            "the edited file would be {} bytes, over the {max}-byte limit",
            text.len()
        )));
    }
    let line = first_at.unwrap_or(1);
    let what = match replaced {
        1 => format!("{name}: 1 replacement at line {line}"),
        n => format!("{name}: {n} replacements from line {line}"),
    };
    let (summary, intent) = (format!("edited {what}"), format!("will edit {what}"));
    Ok(Plan {
        files: target.files,
        path,
        file,
        text,
        summary,
        intent,
    })
}

/// `edited` with `old`'s final newline, or its absence: an edit changes part of a file, so a
/// replacement of the last line that drops (or adds) the break does not change how the file
/// ends. A file edited to nothing stays empty.
fn keep_final_newline(old: &str, mut edited: String) -> String {
    match (old.ends_with('\n'), edited.ends_with('\n')) {
        (true, false) if !edited.is_empty() => edited.push('\n'),
        (false, true) if !old.is_empty() => {
            edited.pop();
        }
        _ => {}
    }
    edited
}
