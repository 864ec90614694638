//! One MCP tool as an agent tool.

use std::sync::Arc;

use dsh_mcp::{McpError, McpTool};
use dsh_session::ToolCallRecord;
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolKindHint, ToolOutput, ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::connection::Connection;

pub(crate) struct McpToolAdapter {
    /// The name the model calls it by.
    pub(crate) name: String,
    /// The tool as the server described it.
    pub(crate) tool: McpTool,
    /// Its checked input schema.
    pub(crate) schema: Value,
    pub(crate) connection: Arc<Connection>,
}

impl McpToolAdapter {
    fn kind(&self) -> ToolKindHint {
        let hints = &self.tool.annotations;
        if hints.read_only == Some(true) {
            ToolKindHint::Read
        } else if hints.destructive == Some(true) {
            ToolKindHint::Edit
        } else if hints.open_world == Some(true) {
            ToolKindHint::Fetch
        } else {
            ToolKindHint::Other
        }
    }
}

/// The most of a server's answer the model is given: a server may return megabytes (a file,
/// a log), which would fill the context and cost every later request.
const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The most of a tool's description the model is sent: the description rides in every
/// request, so a server's essay (or a hostile megabyte) would cost each one.
const MAX_DESCRIPTION_BYTES: usize = 2048;

/// The end of `text`'s longest prefix of at most `limit` bytes that ends on a character.
fn prefix_end(text: &str, limit: usize) -> usize {
    let mut end = limit.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The most of a server's or tool's name, or a tool's title, shown anywhere: the name the
/// model calls is cut to 64 characters already, but the raw name is also quoted in the
/// description and on cards.
pub(crate) const MAX_NAME_BYTES: usize = 128;

/// `text`, cut to `limit` bytes at a character with an ellipsis when longer.
pub(crate) fn cut(text: &str, limit: usize) -> String {
    let end = prefix_end(text, limit);
    if end == text.len() {
        text.to_owned()
    } else {
        format!("{}…", &text[..end])
    }
}

/// `about`, cut to [`MAX_DESCRIPTION_BYTES`] with an ellipsis when longer.
fn described(about: &str) -> String {
    cut(about, MAX_DESCRIPTION_BYTES)
}

/// `text`, or its first [`MAX_RESULT_BYTES`] (cut at a character boundary) and a line saying
/// how much the server sent.
fn bounded(text: String) -> String {
    if text.len() <= MAX_RESULT_BYTES {
        return text;
    }
    let end = prefix_end(&text, MAX_RESULT_BYTES);
    format!(
        "{}\n[… cut: the server returned {} bytes; the first {end} are shown]",
        &text[..end],
        text.len()
    )
}

/// The result code of a failed MCP call, for the log and the model.
fn code(error: &McpError) -> &'static str {
    match error {
        McpError::Start { .. } => "mcp_start_failed",
        McpError::Timeout { .. } => "mcp_timeout",
        McpError::Protocol { .. } => "mcp_protocol_error",
        McpError::Server { .. } => "mcp_server_error",
        McpError::Gone { .. } => "mcp_server_gone",
        McpError::Cancelled { .. } => dsh_tools::codes::CANCELLED,
    }
}

impl Tool for McpToolAdapter {
    fn schema(&self) -> ToolSchema {
        let about = described(self.tool.description.as_deref().unwrap_or_default());
        ToolSchema {
            name: self.name.clone(),
            description: format!(
                "{about} (tool `{}` of MCP server `{}`)",
                cut(&self.tool.name, MAX_NAME_BYTES),
                cut(self.connection.name(), MAX_NAME_BYTES)
            )
            .trim_start()
            .to_owned(),
            parameters: self.schema.clone(),
        }
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn effect(&self, _args: &Value, _roots: &Roots) -> Effect {
        // Only the server's own word that the tool reads makes it run like a read.
        if self.tool.annotations.read_only == Some(true) {
            Effect::Read
        } else {
            Effect::Execute
        }
    }

    fn call(
        &self,
        args: Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let connection = self.connection.clone();
        let tool = self.tool.name.clone();
        let cancel = cx.cancellation().clone();
        Box::pin(async move {
            let started = std::time::Instant::now();
            match connection.call(&tool, args, cancel).await {
                Ok(outcome) => Ok(ToolOutput {
                    content: bounded(outcome.text),
                    is_error: outcome.is_error,
                    meta: None,
                }),
                // Said as the bash tool says its own: the person stopped it, nothing failed.
                Err(McpError::Cancelled { server }) => Err(ToolError::new(
                    dsh_tools::codes::CANCELLED,
                    format!(
                        "[cancelled by the user after {:.1} s; MCP server {server} was told to \
                         stop the call]",
                        started.elapsed().as_secs_f64()
                    ),
                )),
                Err(error) => Err(ToolError::new(code(&error), error.to_string())),
            }
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        let shown = self
            .tool
            .annotations
            .title
            .as_deref()
            .unwrap_or(&self.tool.name);
        let title = format!(
            "{}: {}",
            cut(self.connection.name(), MAX_NAME_BYTES),
            cut(shown, MAX_NAME_BYTES)
        );
        Some(ToolCallView::titled(title, self.kind(), call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_description_is_cut_at_a_character_with_an_ellipsis() {
        assert_eq!(described("Echoes."), "Echoes.");
        let long = "ü".repeat(MAX_DESCRIPTION_BYTES);
        let cut = described(&long);
        let kept = cut.strip_suffix('…').unwrap();
        assert!(kept.len() <= MAX_DESCRIPTION_BYTES && kept.chars().all(|c| c == 'ü'));
        assert_eq!(kept.len(), MAX_DESCRIPTION_BYTES);
    }

    #[test]
    fn a_long_answer_is_cut_at_a_character_and_says_so() {
        assert_eq!(bounded("short".into()), "short");
        let long = "é".repeat(MAX_RESULT_BYTES);
        let cut = bounded(long.clone());
        assert!(cut.len() < long.len());
        let (head, note) = cut.rsplit_once('\n').unwrap();
        assert!(head.len() <= MAX_RESULT_BYTES && head.chars().all(|c| c == 'é'));
        assert_eq!(
            note,
            format!(
                "[… cut: the server returned {} bytes; the first {} are shown]",
                long.len(),
                head.len()
            )
        );
    }
}
