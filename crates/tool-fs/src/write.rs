//! `write`: create a file, or overwrite one the model has read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs::{FileAccess, FsError, Version};
use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::words::count;
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::args::{self, WriteArgs};
use crate::config::ToolFsConfig;
use crate::errors::from_fs;
use crate::ledger::Ledger;
use crate::present;
use crate::region::Region;
use crate::target::{locate, shown};

/// The `write` tool.
pub(crate) struct WriteTool {
    pub config: ToolFsConfig,
    pub ledger: Arc<Ledger>,
}

impl Tool for WriteTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "write".into(),
            description: "Create a file with the given content, or replace all of an existing file you have read in this session (missing directories are created). To change part of a file, use edit.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, absolute or relative to the working directory."},
                    "content": {"type": "string", "description": "The whole new content."}
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "write".into()
    }

    fn effect(&self, args: &Value, roots: &Roots) -> Effect {
        effect_of(args, roots)
    }

    fn preview(
        &self,
        args: &Value,
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
            let old = plan.old.as_deref().unwrap_or("");
            // Shown before the answer: what will change, not what did.
            Some(Region::of(old, &plan.content, plan.old.is_none()).view(&plan.path, &plan.intent))
        })
    }

    fn call(
        &self,
        args: Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let max = self.config.max_write_bytes;
        let ledger = self.ledger.clone();
        Box::pin(async move {
            let plan = plan(&ledger, &cx, args, max).await?;
            let expected = plan.version.as_ref();
            let version = plan
                .files
                .write(&plan.path, &plan.content, expected)
                .await
                .map_err(|e| from_fs(&e))?;
            ledger.saw(&cx, &plan.path, version);
            let meta = Region::of(
                plan.old.as_deref().unwrap_or(""),
                &plan.content,
                plan.old.is_none(),
            )
            .meta(&plan.path, &plan.summary);
            Ok(ToolOutput {
                content: format!("{}.", plan.summary),
                is_error: false,
                meta: Some(meta),
            })
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::change_call(call, "Write")
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::diff_result(call, result)
    }
}

/// An edit or write inside the roots is an edit; elsewhere, or with no readable path, it is
/// an edit outside (which asks in more modes).
pub(crate) fn effect_of(args: &Value, roots: &Roots) -> Effect {
    match args
        .get("path")
        .and_then(Value::as_str)
        .map(|p| roots.resolve(p))
    {
        Some(Ok(resolved)) if resolved.inside => Effect::Edit,
        Some(Ok(_) | Err(_)) | None => Effect::EditOutside,
    }
}

/// What reading `args.path` does: a read inside the session's directories, or outside (which
/// `ask` asks about). No path is the working directory: inside.
pub(crate) fn read_effect_of(args: &Value, roots: &Roots) -> Effect {
    match args
        .get("path")
        .and_then(Value::as_str)
        .map(|p| roots.resolve(p))
    {
        Some(Ok(resolved)) if !resolved.inside => Effect::ReadOutside,
        // A path that cannot be resolved fails in the call, with its reason.
        Some(Ok(_) | Err(_)) | None => Effect::Read,
    }
}

/// The caller must have read `path`, and it must not have changed since.
pub(crate) fn check_seen(
    ledger: &Ledger,
    cx: &ToolContext,
    path: &Path,
    name: &str,
    now: &Version,
) -> Result<(), ToolError> {
    match ledger.seen(cx, path) {
        None => Err(ToolError::new(
            "not_read",
            format!("{name} has not been read in this session: read it first, then change it."),
        )),
        Some(seen) if &seen != now => Err(ToolError::new(
            "stale",
            format!("{name} changed since you last read it: read it again, then change it."),
        )),
        Some(_) => Ok(()),
    }
}

/// A write worked out: the file as read (none when new) and what replaces it.
struct Plan {
    files: Arc<dyn FileAccess>,
    path: PathBuf,
    old: Option<String>,
    version: Option<Version>,
    content: String,
    /// What happened, for the result.
    summary: String,
    /// What will happen, for a question asked before.
    intent: String,
}

/// Checks the arguments and the read rule; writes nothing.
async fn plan(
    ledger: &Ledger,
    cx: &ToolContext,
    args: Value,
    max: usize,
) -> Result<Plan, ToolError> {
    let args: WriteArgs = args::parse(args)?;
    args::non_empty("path", &args.path)?;
    args::at_most("content", &args.content, max)?;
    let target = locate(cx, &args.path)?;
    let path = target.resolved.path;
    let name = shown(cx, &path);
    let (old, version) = match target.files.read(&path).await {
        Ok(file) => {
            check_seen(ledger, cx, &path, &name, &file.version)?;
            (Some(file.text), Some(file.version))
        }
        Err(FsError::NotFound { .. }) => (None, None),
        Err(err) => return Err(from_fs(&err)),
    };
    let lines = args.content.lines().count();
    let what = format!("{name} ({})", count(lines, "line", "lines"));
    let (summary, intent) = match &old {
        None => (format!("created {what}"), format!("will create {what}")),
        Some(_) => (format!("wrote {what}"), format!("will write {what}")),
    };
    Ok(Plan {
        files: target.files,
        path,
        old,
        version,
        content: args.content,
        summary,
        intent,
    })
}
