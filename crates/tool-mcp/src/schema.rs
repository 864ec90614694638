//! Input schemas the model API takes.

use dsh_mcp::McpTool;
use serde_json::Value;

/// The largest input schema offered, serialized: the schema rides in every request, so a
/// server's megabyte would cost each one (and fill a small window).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// The schema to offer for `tool`, or why it is not offered: a tool needs a name (a server's
/// list is outside input) and an input schema the model API takes ([`checked_schema`]) of
/// at most [`MAX_SCHEMA_BYTES`].
pub fn checked_tool(tool: &McpTool) -> Result<Value, String> {
    if tool.name.trim().is_empty() {
        return Err("it has no name".into());
    }
    let schema = checked_schema(&tool.input_schema)?;
    let size = schema.to_string().len();
    if size > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is {} KiB, over the {} KiB a tool may add to every request",
            size.div_ceil(1024),
            MAX_SCHEMA_BYTES / 1024
        ));
    }
    Ok(schema)
}

/// The schema to offer for a tool's `input`: an object schema as it is (`"type": "object"`
/// added when absent), or why the model API would refuse it.
pub fn checked_schema(input: &Value) -> Result<Value, String> {
    let Value::Object(map) = input else {
        return Err(format!("its input schema is not a JSON object: {input}"));
    };
    match map.get("type") {
        None => {
            let mut map = map.clone();
            map.insert("type".into(), Value::String("object".into()));
            Ok(Value::Object(map))
        }
        Some(Value::String(kind)) if kind == "object" => {
            if map.get("properties").is_some_and(|p| !p.is_object()) {
                return Err("its `properties` is not an object".into());
            }
            Ok(input.clone())
        }
        Some(other) => Err(format!(
            "its input schema has type {other}, and a tool's arguments must be an object"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_schemas_pass_and_others_say_why_not() {
        assert_eq!(
            checked_schema(&json!({"properties": {}})).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        let ok = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(checked_schema(&ok).unwrap(), ok);
        for (bad, why) in [
            (json!("string"), "not a JSON object"),
            (json!({"type": "array"}), "must be an object"),
            (
                json!({"type": "object", "properties": []}),
                "`properties` is not an object",
            ),
        ] {
            assert!(checked_schema(&bad).unwrap_err().contains(why), "{bad}");
        }
    }

    #[test]
    fn a_tool_without_a_name_is_not_offered() {
        let tool = |name: &str| McpTool {
            name: name.into(),
            description: None,
            input_schema: json!({"type": "object"}),
            annotations: dsh_mcp::ToolAnnotations::default(),
        };
        assert!(checked_tool(&tool("echo")).is_ok());
        for nameless in ["", "  "] {
            assert_eq!(checked_tool(&tool(nameless)).unwrap_err(), "it has no name");
        }
    }

    #[test]
    fn a_tool_with_a_schema_over_the_bound_is_not_offered() {
        let big = "x".repeat(MAX_SCHEMA_BYTES);
        let tool = McpTool {
            name: "big".into(),
            description: None,
            input_schema: json!({"type": "object", "description": big}),
            annotations: Default::default(),
        };
        let why = checked_tool(&tool).unwrap_err();
        assert!(why.contains("over the 64 KiB a tool may add"), "{why}");
        let small = McpTool {
            input_schema: json!({"type": "object"}),
            ..tool
        };
        assert!(checked_tool(&small).is_ok());
    }
}
