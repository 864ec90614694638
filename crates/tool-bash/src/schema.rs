//! What the model is told: the three schemas and descriptions.

use dsh_tools::ToolSchema;
use serde_json::json;

use crate::config::MAX_TIMEOUT_MS;

pub fn bash() -> ToolSchema {
    ToolSchema {
        name: "bash".to_owned(),
        description: format!(
            "Run a command with bash. Each call runs in a fresh non-login bash, so `cd`, variables \
             and functions do not persist between calls: pass `workdir` instead. stdout and stderr \
             are merged into one stream. A foreground command times out after 120000 ms unless \
             `timeout_ms` says otherwise (at most {MAX_TIMEOUT_MS}). Long output is shown as its \
             head and tail; read the rest with bash_output using the offset in the notice. Servers, \
             watchers and long jobs belong in `run_in_background`: the call answers with a task id \
             at once, and a notice arrives when the task finishes. Processes a foreground command \
             leaves running are terminated when it ends. Stop a background task with bash_kill. \
             Commands run in a sandbox when dsh has one: they may write only the session's \
             directories and reach no network; if a command needs more, say why in \
             `outside_sandbox` and the user is asked."
        ),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["command"],
            "properties": {
                "command": { "type": "string", "minLength": 1, "description": "The bash command line." },
                "description": { "type": "string", "maxLength": 200, "description": "What the command does, in a few words, for the user." },
                "timeout_ms": { "type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Deadline in milliseconds." },
                "run_in_background": { "type": "boolean", "default": false, "description": "Start as a background task and answer with its id." },
                "workdir": { "type": "string", "minLength": 1, "description": "Directory to run in; relative paths are under the session's directory, ~ is the home directory." },
                "outside_sandbox": { "type": "string", "minLength": 1, "maxLength": crate::args::MAX_REASON_CHARS, "description": "Only when the command cannot work in the sandbox (it must write outside the session's directories or reach the network): one line telling the user why. The user is asked before it runs." }
            }
        }),
    }
}

pub fn bash_output(max_wait_ms: u64) -> ToolSchema {
    ToolSchema {
        name: "bash_output".to_owned(),
        description: "Read the output of a background task (or of a truncated foreground command) \
                      from a byte offset, and its status. Pass back the offset the previous read \
                      reported to continue without repeats. `wait_ms` waits for the task to finish \
                      first, up to that long."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["task_id"],
            "properties": {
                "task_id": task_id(),
                "offset": { "type": "integer", "minimum": 0, "default": 0, "description": "Byte offset to read from." },
                "wait_ms": { "type": "integer", "minimum": 0, "maximum": max_wait_ms, "default": 0, "description": "How long to wait for the task to finish before reading." }
            }
        }),
    }
}

pub fn bash_kill() -> ToolSchema {
    ToolSchema {
        name: "bash_kill".to_owned(),
        description: "Stop a background task and every process it started. Its output stays \
                      readable with bash_output."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["task_id"],
            "properties": {
                "task_id": task_id()
            }
        }),
    }
}

fn task_id() -> serde_json::Value {
    json!({ "type": "string", "minLength": 1, "description": "The task id, such as sh-k3f9-3." })
}
