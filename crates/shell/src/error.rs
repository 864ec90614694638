//! Shell errors: bad input or infrastructure, never a command's own outcome.

use std::path::PathBuf;

use crate::id::TaskId;
use crate::outcome::ExitInfo;

/// Why an executor call failed. On `Err` from `run` or `start` no process exists, no task is
/// recorded and no id is consumed.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// A request or spec field is not acceptable.
    #[error("invalid {field}: {reason}")]
    InvalidRequest {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// `run` got a background spec, or `start` a foreground one.
    #[error("a {} spec was given to the {} call", if *background { "background" } else { "foreground" }, if *background { "foreground" } else { "background" })]
    ModeMismatch {
        /// `spec.background` as received.
        background: bool,
    },
    /// No task with this id (never started, released or evicted).
    #[error("no task {0}")]
    UnknownTask(TaskId),
    /// The task has already finished.
    #[error("task {id} has already finished")]
    AlreadyFinished {
        /// The task.
        id: TaskId,
        /// How it ended.
        exit: Box<ExitInfo>,
    },
    /// The working directory cannot be used.
    #[error("working directory {}: {source}", path.display())]
    BadCwd {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The sandbox the request asked for cannot be applied here: the command did not run.
    #[error("the {policy} sandbox cannot be applied: {reason}")]
    Sandbox {
        /// The policy's name.
        policy: &'static str,
        /// Why (the kernel's answer, a missing helper).
        reason: String,
    },
    /// The shell could not be started.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The executor's task limit is reached.
    #[error("too many shell tasks (limit {limit}); release finished ones first")]
    TooManyTasks {
        /// The limit.
        limit: usize,
    },
    /// Every live task's in-memory tail together would exceed the executor's output budget.
    #[error(
        "the shell executor's output memory ({limit} bytes) is taken by live tasks; release some first"
    )]
    OutputBudget {
        /// The budget in bytes.
        limit: usize,
    },
    /// The executor is being disposed.
    #[error("the shell executor is shutting down")]
    Disposed,
}
