//! One task's shared state: what the supervisor writes and every call reads.

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use dsh_shell::{EndCause, ExitInfo, TaskId, TaskInfo, TaskState};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::output::Output;

/// `TaskInfo` keeps at most this much of a command.
const INFO_COMMAND_BYTES: usize = 4096;

#[derive(Debug)]
pub(crate) struct Task {
    pub id: TaskId,
    pub owner: Option<String>,
    pub command: String,
    pub background: bool,
    pub started_at: SystemTime,
    pub cap: usize,
    /// The leader's pid, which is also its group's and session's id.
    pub pgid: i32,
    /// This task's marker value, `<nonce>.<seq>`.
    pub marker: String,
    pub state: Mutex<TaskMut>,
    /// `Some` once finished: what `wait` returns.
    pub done: watch::Sender<Option<ExitInfo>>,
    /// Wakes the supervisor to act on `TaskMut::cause`.
    pub terminate: Notify,
    /// Cancelled when the supervisor has ended, stragglers and escapees included.
    pub settled: CancellationToken,
    /// Where a streaming run's output goes as it is read.
    pub sink: Option<Sink>,
}

/// A streaming run's sink.
pub(crate) struct Sink(pub dsh_shell::OutputSink);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sink")
    }
}

#[derive(Debug)]
pub(crate) struct TaskMut {
    pub output: Output,
    /// The first cause that started termination.
    pub cause: Option<EndCause>,
    /// Skip the grace: SIGKILL at once.
    pub force: bool,
    pub finished: Option<ExitInfo>,
    /// A dropped `run`: remove the task from the table when it ends.
    pub abandoned: bool,
}

impl Task {
    pub fn lock(&self) -> MutexGuard<'_, TaskMut> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `cause` unless an earlier one exists and wakes the supervisor. Returns false
    /// when the task had already finished.
    pub fn request_end(&self, cause: EndCause, force: bool) -> bool {
        let mut state = self.lock();
        if state.finished.is_some() {
            return false;
        }
        state.cause.get_or_insert(cause);
        state.force |= force;
        drop(state);
        self.terminate.notify_one();
        true
    }

    pub fn info(&self) -> TaskInfo {
        let state = self.lock();
        let task_state = match (&state.finished, &state.cause) {
            (Some(exit), _) => TaskState::Finished(exit.clone()),
            (None, Some(cause)) => TaskState::Terminating(cause.clone()),
            (None, None) => TaskState::Running,
        };
        let mut cut = self.command.len().min(INFO_COMMAND_BYTES);
        while !self.command.is_char_boundary(cut) {
            cut -= 1;
        }
        TaskInfo {
            id: self.id,
            command: self.command[..cut].to_owned(),
            background: self.background,
            started_at: self.started_at,
            output_bytes: state.output.total,
            state: task_state,
        }
    }

    pub async fn finished(&self) -> Option<ExitInfo> {
        let mut rx = self.done.subscribe();
        let result = rx.wait_for(Option::is_some).await;
        result.ok().and_then(|exit| exit.clone())
    }
}
