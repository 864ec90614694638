//! dsh's tools as Claude Code names them, so a hook written for Claude Code matches and
//! reads them unchanged.

use serde_json::Value;

/// The tools both have, by dsh's name and Claude Code's.
const SAME_TOOLS: [(&str, &str); 10] = [
    ("bash", "Bash"),
    ("bash_output", "BashOutput"),
    ("bash_kill", "KillShell"),
    ("read", "Read"),
    ("edit", "Edit"),
    ("write", "Write"),
    ("grep", "Grep"),
    ("glob", "Glob"),
    ("todo", "TodoWrite"),
    ("task", "Task"),
];

/// Claude Code's name for dsh's tool `native`: the same tool's name where it has one, an MCP
/// tool (`server__tool`) as `mcp__server__tool`, and any other tool by its own name.
pub fn claude_tool_name(native: &str) -> String {
    if let Some((_, claude)) = SAME_TOOLS.iter().find(|(dsh, _)| *dsh == native) {
        return (*claude).to_owned();
    }
    if native.contains("__") && !native.starts_with("mcp__") {
        return format!("mcp__{native}");
    }
    native.to_owned()
}

/// The arguments of a call of `native` with Claude Code's field names added where they
/// differ, dsh's own kept: `file_path` beside `path` for the file tools, and an edit's first
/// change at the top level when it came as a list.
pub fn claude_tool_input(native: &str, arguments: &Value) -> Value {
    let mut input = arguments.clone();
    let Some(fields) = input.as_object_mut() else {
        return input;
    };
    let file_tool = matches!(native, "read" | "edit" | "write");
    if file_tool
        && !fields.contains_key("file_path")
        && let Some(path) = fields.get("path").cloned()
    {
        fields.insert("file_path".into(), path);
    }
    if native == "edit"
        && !fields.contains_key("old_string")
        && let Some(first) = fields
            .get("edits")
            .and_then(Value::as_array)
            .and_then(|edits| edits.first())
            .and_then(Value::as_object)
            .cloned()
    {
        for key in ["old_string", "new_string", "replace_all"] {
            if let Some(value) = first.get(key) {
                fields.insert(key.into(), value.clone());
            }
        }
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_claude_code_has_take_its_names_and_mcp_tools_its_prefix() {
        assert_eq!(claude_tool_name("bash"), "Bash");
        assert_eq!(claude_tool_name("edit"), "Edit");
        assert_eq!(claude_tool_name("todo"), "TodoWrite");
        assert_eq!(
            claude_tool_name("github__create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(claude_tool_name("mcp__already"), "mcp__already");
        assert_eq!(claude_tool_name("plugin_tool"), "plugin_tool");
    }

    #[test]
    fn a_file_tool_s_path_is_also_its_file_path_and_a_listed_edit_comes_up() {
        let read = claude_tool_input("read", &json!({"path": "src/a.rs", "offset": 3}));
        assert_eq!(
            read,
            json!({"path": "src/a.rs", "file_path": "src/a.rs", "offset": 3})
        );
        let edit = claude_tool_input(
            "edit",
            &json!({"path": "a", "edits": [{"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": "q"}]}),
        );
        assert_eq!(edit["file_path"], "a");
        assert_eq!(
            (edit["old_string"].as_str(), edit["new_string"].as_str()),
            (Some("x"), Some("y"))
        );
        assert_eq!(edit["edits"].as_array().map(Vec::len), Some(2));
        // Other tools, and arguments that are no object, stay as they are.
        assert_eq!(
            claude_tool_input("bash", &json!({"path": "x"})),
            json!({"path": "x"})
        );
        assert_eq!(claude_tool_input("read", &json!("raw")), json!("raw"));
    }
}
