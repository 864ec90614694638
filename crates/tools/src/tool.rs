//! The tool contract: a schema for the model, a body for the loop, and optional presenters.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::codes::is_result_code;
use crate::context::ToolContext;
use crate::permission::Effect;
use crate::present::{ToolCallView, ToolResultView};
use dsh_fs::Roots;
use dsh_session::{ToolCallRecord, ToolResultRecord};

/// What the model is told about a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The name, `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// A JSON Schema object describing the arguments.
    pub parameters: serde_json::Value,
}

/// A successful call's result. `is_error` lets a tool report a failure the model should see
/// as data (a command that exited non-zero) rather than as a [`ToolError`].
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: String,
    /// Whether the call failed in the tool's own terms.
    pub is_error: bool,
    /// Structured output (an exit status, a task id) that presenters read.
    pub meta: Option<serde_json::Value>,
}

impl ToolOutput {
    /// A plain successful result.
    pub fn text(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
            meta: None,
        }
    }
}

/// A failed call: recorded as an error result with `error_code` = `code`, never a turn failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    /// A lowercase snake_case code.
    pub code: String,
    /// What went wrong, for the model.
    pub message: String,
}

impl ToolError {
    /// An error with `code`; a code that is not lowercase snake_case is replaced by
    /// `tool_error`, so a result never carries an ill-formed code.
    pub fn new(code: &str, message: impl Into<String>) -> ToolError {
        let code = if is_result_code(code) {
            code.to_owned()
        } else {
            "tool_error".to_owned()
        };
        ToolError {
            code,
            message: message.into(),
        }
    }
}

/// A tool the agent loop can call. Implementations are shared across agents and calls.
pub trait Tool: Send + Sync + 'static {
    /// The schema offered to the model.
    fn schema(&self) -> ToolSchema;

    /// The name the model calls it by: the schema's. A tool whose schema takes work to build
    /// says its name directly, since registration needs only that.
    fn name(&self) -> String {
        self.schema().name
    }

    /// What the system prompt says about when and how to use this tool, beyond its schema;
    /// appended to the built-in prompt only while the tool is registered, so the prompt never
    /// mentions a tool the model does not have.
    fn guidance(&self) -> Option<String> {
        None
    }

    /// How long a cancelled body of this tool may take to return before the loop aborts it,
    /// given `grace`, the loop's bound for every body. A body that waits for child agents to
    /// end (each giving its own tools `grace`) needs more. The default: `grace`.
    fn cancel_grace(&self, grace: std::time::Duration) -> std::time::Duration {
        grace
    }

    /// Pure and cheap. `true` lets adjacent calls of parallel-safe tools run concurrently.
    fn parallel_safe(&self) -> bool {
        false
    }

    /// What the call with `args` would do, for the permission mode to weigh. Cheap; it may
    /// look at the disk (whether a path leads outside `roots`). The default is the cautious
    /// answer: anything may happen.
    fn effect(&self, args: &serde_json::Value, roots: &Roots) -> Effect {
        let _ = (args, roots);
        Effect::Execute
    }

    /// What the call would change, shown in the question before a call that asks (an edit's
    /// diff). Reads what it needs through `cx` and changes nothing; `None` when there is
    /// nothing to show or the call would fail anyway.
    fn preview(
        &self,
        args: &serde_json::Value,
        cx: &ToolContext,
    ) -> BoxFuture<'static, Option<ToolResultView>> {
        let _ = (args, cx);
        Box::pin(async { None })
    }

    /// Runs the call. The body should watch `cx.cancellation()` and return promptly when it
    /// fires; the loop aborts it after its grace otherwise.
    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;

    /// How a front end shows the call, from its persisted record alone.
    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        let _ = call;
        None
    }

    /// How a front end shows the result, from the persisted records alone.
    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        let _ = (call, result);
        None
    }
}
