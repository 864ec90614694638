//! `read`: a text file with line numbers; records the version the model saw.

use std::sync::Arc;

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_tools::words::count;
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::json;

use crate::args::{self, ReadArgs};
use crate::config::ToolFsConfig;
use crate::errors::{from_fs, invalid};
use crate::ledger::Ledger;
use crate::present;
use crate::target::{locate, shown};

/// The most lines one call may ask for.
const MAX_LIMIT: usize = 100_000;

/// The `read` tool.
pub(crate) struct ReadTool {
    pub config: ToolFsConfig,
    pub ledger: Arc<Ledger>,
}

impl Tool for ReadTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "read".into(),
            description: format!(
                "Read a text file. Lines are numbered (`number<TAB>text`); the numbers are not part of the file. Shows the first {} lines unless you give offset (the first line, 1-based) and limit; longer lines are cut. Read a file before you edit or overwrite it.",
                self.config.read_lines
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, absolute or relative to the working directory."},
                    "offset": {"type": "integer", "minimum": 1, "description": "The first line to show, 1-based."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "read".into()
    }

    /// The guidance of all five file tools, given once: they are registered together.
    fn guidance(&self) -> Option<String> {
        Some(include_str!("../prompts/files.md").trim_end().to_owned())
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
        let config = self.config.clone();
        let ledger = self.ledger.clone();
        Box::pin(async move {
            let args: ReadArgs = args::parse(args)?;
            args::non_empty("path", &args.path)?;
            let offset = args::count("offset", args.offset, usize::MAX >> 1)?.unwrap_or(1);
            let limit = args::count("limit", args.limit, MAX_LIMIT)?.unwrap_or(config.read_lines);
            let target = locate(&cx, &args.path)?;
            let path = target.resolved.path;
            let file = target.files.read(&path).await.map_err(|e| from_fs(&e))?;
            let name = shown(&cx, &path);
            let lines: Vec<&str> = file.text.lines().collect();
            let total = lines.len();
            if total == 0 {
                ledger.saw(&cx, &path, file.version);
                return Ok(output(format!("({name} is empty)"), &name, 0, 0, 0));
            }
            if offset > total {
                return Err(invalid(format!(
                    "invalid offset: {name} has {total} lines, so line {offset} is past its end"
                )));
            }
            let end = (offset - 1 + limit).min(total);
            let shown = &lines[offset - 1..end];
            let mut text = String::with_capacity(shown.iter().map(|l| l.len() + 8).sum());
            for (i, line) in shown.iter().enumerate() {
                number(&mut text, offset + i);
                push_cut(&mut text, line, config.line_chars);
                text.push('\n');
            }
            if end < total {
                text.push_str(&format!(
                    "[Lines {offset}–{end} of {total}. Read on with offset {}.]\n",
                    end + 1
                ));
            }
            ledger.saw(&cx, &path, file.version);
            Ok(output(text, &name, offset, end, total))
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::read_call(call)
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::summary_result(call, result)
    }
}

fn output(content: String, name: &str, from: usize, to: usize, total: usize) -> ToolOutput {
    let summary = match total {
        0 => format!("read {name}: empty"),
        _ if from == 1 && to == total => format!("read {name}: {}", count(total, "line", "lines")),
        _ => format!("read {name}: lines {from}–{to} of {total}"),
    };
    ToolOutput {
        content,
        is_error: false,
        meta: Some(json!({"summary": summary})),
    }
}

/// Appends `n` right-aligned in six columns and a tab, as `cat -n` does.
fn number(out: &mut String, n: usize) {
    let digits = n.to_string();
    for _ in digits.len()..6 {
        out.push(' ');
    }
    out.push_str(&digits);
    out.push('\t');
}

/// Appends `line` cut to `max` characters, with a note when cut.
fn push_cut(out: &mut String, line: &str, max: usize) {
    // A line of at most `max` bytes has at most `max` characters: no need to count.
    if line.len() <= max {
        out.push_str(line.trim_end_matches('\r'));
        return;
    }
    match line.char_indices().nth(max) {
        Some((at, _)) => {
            out.push_str(&line[..at]);
            out.push_str(&format!("… [line cut at {max} characters]"));
        }
        None => out.push_str(line.trim_end_matches('\r')),
    }
}
