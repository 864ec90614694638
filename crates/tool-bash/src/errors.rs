//! Every error text and code the tools answer with. An error is always a `ToolError` whose
//! message the model reads and whose code front ends match.

use dsh_shell::ShellError;
use dsh_tools::ToolError;

/// Argument errors.
pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
/// The working directory cannot be used.
pub const BAD_WORKDIR: &str = "bad_workdir";
/// The shell could not be started.
pub const SPAWN_FAILED: &str = "spawn_failed";
/// A limit of the executor is reached.
pub const TOO_MANY_TASKS: &str = "too_many_tasks";
/// No executor, or it (or this plugin) is going away.
pub const SHELL_UNAVAILABLE: &str = "shell_unavailable";
/// The task is not the caller's, or does not exist.
pub const TASK_NOT_FOUND: &str = "task_not_found";
/// The task was started by an earlier run of dsh (read from a resumed session's history).
pub const TASK_FROM_EARLIER_RUN: &str = "task_from_earlier_run";
/// The call was cancelled.
pub use dsh_tools::codes::CANCELLED;

pub fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(INVALID_ARGUMENTS, message)
}

/// The same text for an unknown, released, malformed and foreign id: nobody learns that
/// another session's task exists.
pub fn not_found(raw_id: &str) -> ToolError {
    let quoted = serde_json::Value::String(raw_id.to_owned()).to_string();
    ToolError::new(TASK_NOT_FOUND, format!("task {quoted} not found"))
}

/// An id a resumed session's history holds: its task ended with the process that started it.
/// This says nothing about any other session (no run's tasks are reachable from another).
pub fn earlier_run(raw_id: &str) -> ToolError {
    let quoted = serde_json::Value::String(raw_id.to_owned()).to_string();
    ToolError::new(
        TASK_FROM_EARLIER_RUN,
        format!(
            "task {quoted} belonged to an earlier run of dsh: background tasks end when dsh exits, and its output is gone. Run the command again if you still need it."
        ),
    )
}

pub fn shutting_down() -> ToolError {
    ToolError::new(SHELL_UNAVAILABLE, "shell executor is shutting down")
}

pub fn reloading() -> ToolError {
    ToolError::new(SHELL_UNAVAILABLE, "tool-bash is reloading; retry the call")
}

pub fn cancelled() -> ToolError {
    ToolError::new(CANCELLED, "the call was cancelled")
}

/// An executor error on a call that names a task the caller may reach.
pub fn task_error(raw_id: &str, error: ShellError) -> ToolError {
    match error {
        ShellError::Disposed => shutting_down(),
        // Whatever else went wrong with it, the caller learns only that the task is not
        // theirs to reach: the same text as for an id that never existed.
        ShellError::UnknownTask(_)
        | ShellError::InvalidRequest { .. }
        | ShellError::ModeMismatch { .. }
        | ShellError::AlreadyFinished { .. }
        | ShellError::BadCwd { .. }
        | ShellError::Spawn { .. }
        | ShellError::Sandbox { .. }
        | ShellError::TooManyTasks { .. }
        | ShellError::OutputBudget { .. } => not_found(raw_id),
    }
}

/// An executor error while starting a command.
pub fn start_error(error: ShellError) -> ToolError {
    match error {
        ShellError::BadCwd { path, source } => ToolError::new(
            BAD_WORKDIR,
            format!("cannot run in workdir {}: {source}", quote_path(&path)),
        ),
        ShellError::Spawn { program, source } => ToolError::new(
            SPAWN_FAILED,
            format!("failed to start {}: {source}", program.display()),
        ),
        // The command did not run: the sandbox it was to run in cannot be applied here.
        sandbox @ ShellError::Sandbox { .. } => ToolError::new(SPAWN_FAILED, sandbox.to_string()),
        ShellError::TooManyTasks { limit } => ToolError::new(
            TOO_MANY_TASKS,
            format!(
                "too many running tasks (limit {limit}); stop one with bash_kill or wait for one to finish"
            ),
        ),
        ShellError::OutputBudget { .. } => ToolError::new(
            TOO_MANY_TASKS,
            "the shell's output memory is taken by running tasks; stop one with bash_kill or wait for one to finish",
        ),
        ShellError::Disposed => shutting_down(),
        ShellError::InvalidRequest { field, reason } => {
            invalid(format!("invalid {field}: {reason}"))
        }
        // Not what starting a command meets; said as it is if it ever is.
        other @ (ShellError::ModeMismatch { .. }
        | ShellError::UnknownTask(_)
        | ShellError::AlreadyFinished { .. }) => invalid(other.to_string()),
    }
}

pub fn quote_path(path: &std::path::Path) -> String {
    serde_json::Value::String(path.to_string_lossy().into_owned()).to_string()
}
