//! What a handler reads on stdin: one JSON object in Claude Code's shape.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::event::HookEvent;
use crate::tools::{claude_tool_input, claude_tool_name};

/// The permission mode as Claude Code names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionModeName {
    /// dsh's `ask`.
    Default,
    /// dsh's `accept-edits`.
    AcceptEdits,
    /// dsh's `allow`.
    BypassPermissions,
}

impl PermissionModeName {
    /// Claude Code's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionModeName::Default => "default",
            PermissionModeName::AcceptEdits => "acceptEdits",
            PermissionModeName::BypassPermissions => "bypassPermissions",
        }
    }
}

/// The fields every event has.
#[derive(Clone, Debug, PartialEq)]
pub struct Common {
    /// The session.
    pub session_id: String,
    /// The session's log, when it has one on disk.
    pub transcript_path: Option<PathBuf>,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The permission mode in force.
    pub permission_mode: PermissionModeName,
}

/// An event's own fields.
#[derive(Clone, Debug, PartialEq)]
pub enum EventFields {
    /// `SessionStart`: `startup`, `resume` or `compact`.
    SessionStart {
        /// How the session came to start.
        source: String,
    },
    /// `UserPromptSubmit`.
    UserPromptSubmit {
        /// The prompt's text.
        prompt: String,
    },
    /// `PreToolUse`.
    PreToolUse {
        /// dsh's name of the tool.
        tool: String,
        /// The call's arguments as the model sent them.
        arguments: Value,
        /// The model's id of the call.
        call_id: String,
    },
    /// `PostToolUse`.
    PostToolUse {
        /// dsh's name of the tool.
        tool: String,
        /// The call's arguments.
        arguments: Value,
        /// The model's id of the call.
        call_id: String,
        /// The result as the model got it.
        response: Value,
    },
    /// `Stop`.
    Stop {
        /// A `Stop` hook already kept this turn going.
        stop_hook_active: bool,
    },
    /// `SubagentStop`.
    SubagentStop {
        /// A `SubagentStop` hook already kept this turn going.
        stop_hook_active: bool,
    },
    /// `PreCompact`.
    PreCompact {
        /// `manual` or `auto`.
        trigger: String,
        /// What the person asked the summary to keep (`/compact …`), or empty.
        custom_instructions: String,
    },
    /// `Notification`.
    Notification {
        /// What waits for the person, in words.
        message: String,
        /// Which kind of wait (`permission_prompt`, `idle_prompt`): what a matcher matches.
        kind: String,
    },
}

/// One event's input.
#[derive(Clone, Debug, PartialEq)]
pub struct HookInput {
    /// The common fields.
    pub common: Common,
    /// The event's own.
    pub fields: EventFields,
}

impl HookInput {
    /// The event.
    pub fn event(&self) -> HookEvent {
        match &self.fields {
            EventFields::SessionStart { .. } => HookEvent::SessionStart,
            EventFields::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            EventFields::PreToolUse { .. } => HookEvent::PreToolUse,
            EventFields::PostToolUse { .. } => HookEvent::PostToolUse,
            EventFields::Stop { .. } => HookEvent::Stop,
            EventFields::SubagentStop { .. } => HookEvent::SubagentStop,
            EventFields::PreCompact { .. } => HookEvent::PreCompact,
            EventFields::Notification { .. } => HookEvent::Notification,
        }
    }

    /// What a matcher is matched against: a tool's Claude Code name and dsh's, a session's
    /// source, a compaction's trigger, a notification's type; nothing for the other events.
    pub fn subjects(&self) -> Vec<String> {
        match &self.fields {
            EventFields::PreToolUse { tool, .. } | EventFields::PostToolUse { tool, .. } => {
                vec![claude_tool_name(tool), tool.clone()]
            }
            EventFields::SessionStart { source } => vec![source.clone()],
            EventFields::PreCompact { trigger, .. } => vec![trigger.clone()],
            EventFields::Notification { kind, .. } => vec![kind.clone()],
            EventFields::UserPromptSubmit { .. }
            | EventFields::Stop { .. }
            | EventFields::SubagentStop { .. } => Vec::new(),
        }
    }

    /// The JSON a handler reads on stdin.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        let common = &self.common;
        out.insert("session_id".into(), json!(common.session_id));
        out.insert(
            "transcript_path".into(),
            json!(
                common
                    .transcript_path
                    .as_ref()
                    .map(|p| p.display().to_string())
            ),
        );
        out.insert("cwd".into(), json!(common.cwd.display().to_string()));
        out.insert("hook_event_name".into(), json!(self.event().as_str()));
        out.insert(
            "permission_mode".into(),
            json!(common.permission_mode.as_str()),
        );
        let tool = |out: &mut Map<String, Value>, tool: &str, arguments: &Value, id: &str| {
            out.insert("tool_name".into(), json!(claude_tool_name(tool)));
            out.insert("tool_input".into(), claude_tool_input(tool, arguments));
            out.insert("tool_use_id".into(), json!(id));
            out.insert("dsh_tool_name".into(), json!(tool));
        };
        match &self.fields {
            EventFields::SessionStart { source } => {
                out.insert("source".into(), json!(source));
            }
            EventFields::UserPromptSubmit { prompt } => {
                out.insert("prompt".into(), json!(prompt));
            }
            EventFields::PreToolUse {
                tool: name,
                arguments,
                call_id,
            } => tool(&mut out, name, arguments, call_id),
            EventFields::PostToolUse {
                tool: name,
                arguments,
                call_id,
                response,
            } => {
                tool(&mut out, name, arguments, call_id);
                out.insert("tool_response".into(), response.clone());
            }
            EventFields::Stop { stop_hook_active }
            | EventFields::SubagentStop { stop_hook_active } => {
                out.insert("stop_hook_active".into(), json!(stop_hook_active));
            }
            EventFields::PreCompact {
                trigger,
                custom_instructions,
            } => {
                out.insert("trigger".into(), json!(trigger));
                out.insert("custom_instructions".into(), json!(custom_instructions));
            }
            EventFields::Notification { message, kind } => {
                out.insert("message".into(), json!(message));
                out.insert("notification_type".into(), json!(kind));
                out.insert("title".into(), json!("dsh"));
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn common() -> Common {
        Common {
            session_id: "01a2".into(),
            transcript_path: Some("/data/sessions/01a2.jsonl".into()),
            cwd: "/work".into(),
            permission_mode: PermissionModeName::AcceptEdits,
        }
    }

    #[test]
    fn a_tool_event_reads_as_claude_code_writes_it_with_dsh_s_name_beside() {
        let input = HookInput {
            common: common(),
            fields: EventFields::PreToolUse {
                tool: "write".into(),
                arguments: json!({"path": "a.txt", "content": "x"}),
                call_id: "call_1".into(),
            },
        };
        assert_eq!(
            input.to_json(),
            json!({
                "session_id": "01a2",
                "transcript_path": "/data/sessions/01a2.jsonl",
                "cwd": "/work",
                "hook_event_name": "PreToolUse",
                "permission_mode": "acceptEdits",
                "tool_name": "Write",
                "tool_input": {"path": "a.txt", "file_path": "a.txt", "content": "x"},
                "tool_use_id": "call_1",
                "dsh_tool_name": "write"
            })
        );
        assert_eq!(input.subjects(), ["Write", "write"]);
    }

    #[test]
    fn each_event_carries_its_own_fields() {
        let of = |fields: EventFields| {
            HookInput {
                common: common(),
                fields,
            }
            .to_json()
        };
        let post = of(EventFields::PostToolUse {
            tool: "bash".into(),
            arguments: json!({"command": "ls"}),
            call_id: "c".into(),
            response: json!({"output": "a\n", "exit_code": 0}),
        });
        assert_eq!(post["tool_response"]["exit_code"], 0);
        assert_eq!(post["tool_name"], "Bash");
        let stop = of(EventFields::Stop {
            stop_hook_active: true,
        });
        assert_eq!(
            (stop["hook_event_name"].as_str(), &stop["stop_hook_active"]),
            (Some("Stop"), &json!(true))
        );
        let start = of(EventFields::SessionStart {
            source: "resume".into(),
        });
        assert_eq!(start["source"], "resume");
        let prompt = of(EventFields::UserPromptSubmit {
            prompt: "hi".into(),
        });
        assert_eq!(prompt["prompt"], "hi");
        assert!(prompt.get("tool_name").is_none());
    }
}
