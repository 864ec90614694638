//! MCP results and tool descriptions read through their JSON, so that a content type or a
//! field the SDK adds later is described rather than a compile error.

use dsh_mcp::{CallOutcome, McpTool, ToolAnnotations};
use serde_json::Value;

/// A `tools/call` result as text: text blocks as they are, anything else in one line.
pub(crate) fn outcome(result: &Value) -> CallOutcome {
    let mut parts = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        let mime = block["mimeType"].as_str().unwrap_or("unknown type");
        let part = match block["type"].as_str().unwrap_or("") {
            "text" => block["text"].as_str().unwrap_or("").to_owned(),
            "image" => format!("[an image ({mime}) the model cannot see]"),
            "audio" => format!("[audio ({mime}) the model cannot hear]"),
            "resource" => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => text.to_owned(),
                    None => format!(
                        "[a binary resource {} ({})]",
                        resource["uri"].as_str().unwrap_or("without a URI"),
                        resource["mimeType"].as_str().unwrap_or("unknown type")
                    ),
                }
            }
            "resource_link" => format!(
                "[a link to {}]",
                block["uri"].as_str().unwrap_or("an unnamed resource")
            ),
            other => format!("[content of type {other:?}]"),
        };
        parts.push(part);
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null())
    {
        parts.push(structured.to_string());
    }
    CallOutcome {
        text: parts.join("\n"),
        is_error: result["isError"].as_bool().unwrap_or(false),
    }
}

/// A tool as the seam describes it.
pub(crate) fn tool(tool: &Value) -> McpTool {
    let hints = &tool["annotations"];
    McpTool {
        name: tool["name"].as_str().unwrap_or("").to_owned(),
        description: tool["description"].as_str().map(str::to_owned),
        input_schema: tool["inputSchema"].clone(),
        annotations: ToolAnnotations {
            title: hints["title"]
                .as_str()
                .or(tool["title"].as_str())
                .map(str::to_owned),
            read_only: hints["readOnlyHint"].as_bool(),
            destructive: hints["destructiveHint"].as_bool(),
            idempotent: hints["idempotentHint"].as_bool(),
            open_world: hints["openWorldHint"].as_bool(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_of_content_reads_as_text_or_one_line() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA", "mimeType": "x/y"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "hologram"}
        ], "isError": true});
        let outcome = outcome(&result);
        assert!(outcome.is_error);
        assert_eq!(
            outcome.text,
            "hello\n[an image (image/png) the model cannot see]\ninside\n\
             [a binary resource file:///b (x/y)]\n[a link to file:///c]\n\
             [content of type \"hologram\"]"
        );
        let structured = outcome_of_structured();
        assert_eq!(structured.text, r#"{"sum":3}"#);
    }

    fn outcome_of_structured() -> CallOutcome {
        outcome(&json!({"content": [], "structuredContent": {"sum": 3}}))
    }

    #[test]
    fn a_tool_keeps_its_schema_and_hints() {
        let t = tool(&json!({"name": "echo", "description": "Echo",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "title": "Echo it"}}));
        assert_eq!(t.name, "echo");
        assert_eq!(t.input_schema, json!({"type": "object"}));
        assert_eq!(t.annotations.read_only, Some(true));
        assert_eq!(t.annotations.title.as_deref(), Some("Echo it"));
    }
}
