//! The `todo` tool: the whole plan in, checked, handed back to the loop in the output.

use dsh_session::ToolCallRecord;
use dsh_tools::{
    Effect, Plan, PlanEntry, PlanStatus, Roots, Tool, ToolCallView, ToolContext, ToolError,
    ToolKindHint, ToolOutput, ToolSchema,
};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

/// The most steps a plan may have: a plan longer than this is not one a person reads.
pub const MAX_ENTRIES: usize = 50;

/// The longest step, in characters.
pub const MAX_ENTRY_CHARS: usize = 300;

/// The tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    content: String,
    status: PlanStatus,
}

/// The plan `args` hold, or why they are not one (the message says what to send instead).
pub fn check(args: &Value) -> Result<Plan, ToolError> {
    let invalid = |message: String| ToolError::new("invalid_arguments", message);
    let args: Args = serde_json::from_value(args.clone()).map_err(|e| {
        invalid(format!(
            "the arguments are not a plan ({e}): send {{\"todos\": [{{\"content\": \"…\", \
             \"status\": \"pending\" | \"in_progress\" | \"completed\"}}, …]}}"
        ))
    })?;
    if args.todos.len() > MAX_ENTRIES {
        return Err(invalid(format!(
            "the plan has {} steps; keep it to {MAX_ENTRIES} by merging small ones",
            args.todos.len()
        )));
    }
    let mut entries = Vec::with_capacity(args.todos.len());
    for (index, item) in args.todos.into_iter().enumerate() {
        let content = item
            .content
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if content.is_empty() {
            return Err(invalid(format!("step {} says nothing", index + 1)));
        }
        if content.chars().count() > MAX_ENTRY_CHARS {
            return Err(invalid(format!(
                "step {} is longer than {MAX_ENTRY_CHARS} characters; say it in a line",
                index + 1
            )));
        }
        entries.push(PlanEntry {
            content,
            status: item.status,
        });
    }
    let working = entries
        .iter()
        .filter(|e| e.status == PlanStatus::InProgress)
        .count();
    if working > 1 {
        return Err(invalid(format!(
            "{working} steps are in_progress; work on one at a time and mark the others pending"
        )));
    }
    Ok(Plan { entries })
}

/// The plan as the model reads it back: one line a step.
fn listing(plan: &Plan) -> String {
    if plan.entries.is_empty() {
        return "The plan is empty now.".to_owned();
    }
    let done = plan
        .entries
        .iter()
        .filter(|e| e.status == PlanStatus::Completed)
        .count();
    let mut text = format!(
        "The plan is updated ({done} of {} done):\n",
        plan.entries.len()
    );
    for entry in &plan.entries {
        let mark = match entry.status {
            PlanStatus::Pending => "[ ]",
            PlanStatus::InProgress => "[>]",
            PlanStatus::Completed => "[x]",
        };
        text.push_str(&format!("{mark} {}\n", entry.content));
    }
    text
}

impl Tool for TodoTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "todo".to_owned(),
            description: "Replace the plan the user sees: the whole list of steps, each with \
                          its status. At most one step is in_progress."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "Every step, in order.",
                        "maxItems": MAX_ENTRIES,
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "description": "The step, in a line."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                            },
                            "required": ["content", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        "todo".into()
    }

    fn guidance(&self) -> Option<String> {
        Some(include_str!("../prompts/todo.md").trim_end().to_owned())
    }

    fn effect(&self, _args: &Value, _roots: &Roots) -> Effect {
        Effect::Read
    }

    fn call(
        &self,
        args: Value,
        _cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let checked = check(&args);
        Box::pin(async move {
            let plan = checked?;
            Ok(ToolOutput::text(listing(&plan)).with_plan(&plan))
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        Some(ToolCallView::titled(
            "Update the plan",
            ToolKindHint::Plan,
            call,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_name_is_its_schema_s() {
        assert_eq!(TodoTool.name(), TodoTool.schema().name);
    }

    #[test]
    fn a_plan_is_checked_whole_and_a_bad_one_says_what_to_send() {
        let ok = json!({"todos": [
            {"content": "read  the\nparser", "status": "completed"},
            {"content": "fix it", "status": "in_progress"},
            {"content": "run the tests", "status": "pending"}
        ]});
        let plan = check(&ok).unwrap();
        assert_eq!(plan.entries[0].content, "read the parser");
        assert_eq!(plan.entries[1].status, PlanStatus::InProgress);
        assert_eq!(
            listing(&plan),
            "The plan is updated (1 of 3 done):\n[x] read the parser\n[>] fix it\n[ ] run the tests\n"
        );
        assert_eq!(check(&json!({"todos": []})).unwrap(), Plan::default());
        let long = "x".repeat(MAX_ENTRY_CHARS + 1);
        let many: Vec<Value> = (0..=MAX_ENTRIES)
            .map(|i| json!({"content": format!("s{i}"), "status": "pending"}))
            .collect();
        let table = [
            (
                json!({"todos": [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]}),
                "2 steps are in_progress",
            ),
            (
                json!({"todos": [{"content": "  ", "status": "pending"}]}),
                "step 1 says nothing",
            ),
            (
                json!({"todos": [{"content": long, "status": "pending"}]}),
                "longer than 300",
            ),
            (json!({"todos": many}), "keep it to 50"),
            (
                json!({"todos": [{"content": "a", "status": "done"}]}),
                "send {\"todos\"",
            ),
            (json!({"items": []}), "send {\"todos\""),
            (json!("todo"), "send {\"todos\""),
        ];
        for (args, needle) in table {
            let err = check(&args).unwrap_err();
            assert_eq!(err.code, "invalid_arguments");
            assert!(err.message.contains(needle), "{args}: {}", err.message);
        }
    }
}
