//! The executor trait and completion subscriptions.

use async_trait::async_trait;

use crate::error::ShellError;
use crate::id::TaskId;
use crate::outcome::{ExitInfo, OutputChunk, RunOutput, TaskDone, TaskInfo};
use crate::request::{ShellExecRequest, ShellExecSpec};

/// Called once per background task that finishes, with the executor itself (so a listener need
/// not hold an `Arc` to it, which would form a cycle). Must not block; a panic is contained.
pub type TaskDoneListener = Box<dyn Fn(&dyn ShellExecutor, &TaskDone) + Send + Sync>;

/// Receives a foreground command's output as it is read: see
/// [`ShellExecutor::run_streaming`].
pub type OutputSink = std::sync::Arc<dyn Fn(&[u8]) + Send + Sync>;

/// A completion subscription; dropping it unsubscribes before `drop` returns.
#[must_use = "dropping the subscription unsubscribes at once"]
pub struct TaskDoneSubscription {
    unsubscribe: Option<Box<dyn FnOnce() + Send>>,
}

impl TaskDoneSubscription {
    /// A subscription that runs `unsubscribe` when dropped (for providers).
    pub fn new(unsubscribe: impl FnOnce() + Send + 'static) -> TaskDoneSubscription {
        TaskDoneSubscription {
            unsubscribe: Some(Box::new(unsubscribe)),
        }
    }
}

impl Drop for TaskDoneSubscription {
    fn drop(&mut self) {
        if let Some(unsubscribe) = self.unsubscribe.take() {
            unsubscribe();
        }
    }
}

impl std::fmt::Debug for TaskDoneSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskDoneSubscription")
    }
}

/// Runs shell commands as tasks. `list`, `owner_of` and `resolve` never wait or do I/O and may
/// be called from anywhere, a completion listener included.
#[async_trait]
pub trait ShellExecutor: Send + Sync + 'static {
    /// Whether a sandboxed request can run here; `Err` says why not (and such a request is
    /// refused). `Ok` lists what the sandbox cannot do here, a sentence each (none when it
    /// does all its policy says). The default: no sandbox is offered.
    fn sandbox(&self) -> Result<Vec<String>, String> {
        Err("this executor offers no sandbox".into())
    }

    /// Applies defaults and caps: the only place that does.
    fn resolve(&self, request: ShellExecRequest) -> Result<ShellExecSpec, ShellError>;

    /// Runs a foreground spec to its end. Cancel-safe: dropping the future kills the task's
    /// group with `Killed(Cancelled)`.
    async fn run(&self, spec: ShellExecSpec) -> Result<RunOutput, ShellError>;

    /// As [`run`](Self::run), handing each piece of the merged output to `sink` as it is
    /// read (before the run ends), in order, on the executor's reader. `sink` must return at
    /// once. An executor that cannot stream runs without calling it: the result is the same.
    async fn run_streaming(
        &self,
        spec: ShellExecSpec,
        sink: OutputSink,
    ) -> Result<RunOutput, ShellError> {
        let _ = sink;
        self.run(spec).await
    }

    /// Starts a background spec and returns its id.
    async fn start(&self, spec: ShellExecSpec) -> Result<TaskId, ShellError>;

    /// At most `limit` bytes of the task's stream from the first available offset `≥ since`.
    async fn read_output(
        &self,
        id: TaskId,
        since: u64,
        limit: usize,
    ) -> Result<OutputChunk, ShellError>;

    /// Starts terminating a running task; does not wait.
    async fn kill(&self, id: TaskId) -> Result<(), ShellError>;

    /// The final exit, once the task has finished.
    async fn wait(&self, id: TaskId) -> Result<ExitInfo, ShellError>;

    /// Kills if needed, awaits, deletes the task's spill file and forgets it.
    async fn release(&self, id: TaskId) -> Result<ExitInfo, ShellError>;

    /// Running and retained tasks, in start order.
    fn list(&self) -> Vec<TaskInfo>;

    /// The owner stored at spawn: `None` for an unknown id and for a task without owner.
    fn owner_of(&self, id: TaskId) -> Option<String>;

    /// Subscribes `listener` to background completions.
    fn on_task_done(&self, listener: TaskDoneListener) -> TaskDoneSubscription;
}
