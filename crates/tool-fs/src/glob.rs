//! `glob`: files whose path matches a glob pattern, newest first.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::words::count;
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use globset::GlobBuilder;
use ignore::WalkState;
use parking_lot::Mutex;
use serde_json::json;

use crate::args::{self, GlobArgs};
use crate::config::ToolFsConfig;
use crate::errors::invalid;
use crate::listing::{relative, search_root, walker};
use crate::present;
use crate::stop::{Stop, Stopped};

/// The `glob` tool.
pub(crate) struct GlobTool {
    pub config: ToolFsConfig,
}

impl Tool for GlobTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "glob".into(),
            description: format!(
                "Find files by name with a glob pattern such as \"**/*.rs\" or \"src/**/test_*.py\" (`*` stays within a directory, `**` crosses them). Honours .gitignore and skips hidden files. Newest first, at most {}. Prefer this to find or ls -R in bash.",
                self.config.glob_limit
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob, matched against paths relative to path."},
                    "path": {"type": "string", "description": "The directory to search (default: the working directory)."}
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "glob".into()
    }

    fn effect(&self, args: &serde_json::Value, roots: &Roots) -> Effect {
        crate::write::read_effect_of(args, roots)
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let limit = self.config.glob_limit;
        let budget = self.config.search_timeout;
        Box::pin(async move {
            let args: GlobArgs = args::parse(args)?;
            args::non_empty("pattern", &args.pattern)?;
            let root = search_root(&cx, args.path.as_deref())?;
            if !root.is_dir() {
                return Err(ToolError::new(
                    "not_found",
                    format!("{} is not a directory.", root.display()),
                ));
            }
            let pattern = args.pattern.trim_start_matches("./");
            let glob = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| invalid(format!("invalid pattern: {e}")))?
                .compile_matcher();
            let cwd = cx.session_cwd().map(Path::to_path_buf);
            let stop = Stop::new(cx.cancellation().clone(), budget);
            let walk_root = root.clone();
            let (mut found, stopped) = tokio::task::spawn_blocking(move || {
                let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
                walker(&walk_root).build_parallel().run(|| {
                    let (glob, found, root) = (&glob, &found, &walk_root);
                    let stop = &stop;
                    Box::new(move |entry| {
                        if stop.now().is_some() {
                            return WalkState::Quit;
                        }
                        let Ok(entry) = entry else {
                            return WalkState::Continue;
                        };
                        if !entry.file_type().is_some_and(|t| t.is_file()) {
                            return WalkState::Continue;
                        }
                        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                        if glob.is_match(rel) {
                            let modified = entry
                                .metadata()
                                .ok()
                                .and_then(|m| m.modified().ok())
                                .unwrap_or(SystemTime::UNIX_EPOCH);
                            found.lock().push((modified, entry.path().to_path_buf()));
                        }
                        WalkState::Continue
                    })
                });
                (found.into_inner(), stop.now())
            })
            .await
            .map_err(|e| ToolError::new("internal", format!("the search did not finish: {e}")))?;
            if stopped == Some(Stopped::Cancelled) {
                return Err(ToolError::new(
                    "cancelled",
                    Stopped::Cancelled.note("search"),
                ));
            }
            found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let total = found.len();
            let summary = format!("glob {}: {}", args.pattern, count(total, "file", "files"));
            let mut lines: Vec<String> = found
                .iter()
                .take(limit)
                .map(|(_, path)| relative(path, cwd.as_deref()).display().to_string())
                .collect();
            if total == 0 {
                lines.push(format!(
                    "No files match {:?} in {}.",
                    args.pattern,
                    root.display()
                ));
            } else if total > limit {
                lines.push(format!(
                    "[Showing the {limit} newest of {total} files. Narrow the pattern or the path.]"
                ));
            }
            if let Some(out_of_time @ Stopped::OutOfTime(_)) = stopped {
                lines.push(out_of_time.note("search"));
            }
            Ok(ToolOutput {
                content: lines.join("\n"),
                is_error: false,
                meta: Some(json!({"summary": summary})),
            })
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::search_call(call, "glob")
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::found_result(call, result)
    }
}
