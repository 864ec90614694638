//! What executions produce: exits, output statistics, task states and output chunks. No type
//! here carries the owner; `ShellExecutor::owner_of` is its only read path.

use std::time::{Duration, SystemTime};

use bytes::Bytes;

use crate::id::TaskId;

/// A finished foreground run.
#[derive(Clone, Debug)]
pub struct RunOutput {
    /// The task's id.
    pub task_id: TaskId,
    /// How it ended.
    pub exit: ExitInfo,
    /// The last `min(total, output_cap)` bytes of the merged stream.
    pub tail: Bytes,
    /// The stream offset of `tail[0]`.
    pub tail_start: u64,
    /// True when the task stays readable after `run` returned (its output was spilled).
    pub retained: bool,
}

/// How a task ended. Exactly one of `code` and `signal` is `Some`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when the leader exited.
    pub code: Option<i32>,
    /// The signal, when one ended the leader.
    pub signal: Option<SignalInfo>,
    /// The first cause that started termination, or `Exited`.
    pub end: EndCause,
    /// From spawn to the leader's exit.
    pub duration: Duration,
    /// Whether processes left in the group after the leader exited by itself were terminated.
    /// Members still dying after a timeout, kill or cancel do not count: that ending already
    /// asked them to stop.
    pub stragglers_terminated: bool,
    /// What the output stream held.
    pub output: OutputStats,
}

impl ExitInfo {
    /// True when the deadline ended it.
    pub fn timed_out(&self) -> bool {
        matches!(self.end, EndCause::TimedOut { .. })
    }

    /// True when a kill (requested, cancel or disposal) ended it.
    pub fn killed(&self) -> bool {
        matches!(self.end, EndCause::Killed(_))
    }

    /// True when it exited by itself with code 0.
    pub fn success(&self) -> bool {
        self.end == EndCause::Exited && self.code == Some(0)
    }
}

/// A signal by number and name (`SIGTERM`; `SIG<n>` when it has no name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignalInfo {
    /// The number.
    pub number: i32,
    /// The name.
    pub name: String,
}

/// Why a task ended. Recorded once: later causes never overwrite the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EndCause {
    /// dsh never tried to end it.
    Exited,
    /// Its deadline passed.
    TimedOut {
        /// The deadline.
        after: Duration,
    },
    /// It was killed.
    Killed(KillCause),
}

/// Who killed a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillCause {
    /// `kill` or `release`.
    Requested,
    /// The caller's future was dropped or its turn cancelled.
    Cancelled,
    /// The executor was disposed.
    Disposed,
}

/// What a task's output stream held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputStats {
    /// Bytes produced.
    pub total_bytes: u64,
    /// True when more was produced than the in-memory tail holds.
    pub truncated: bool,
    /// What was written to the spill file.
    pub spill: Spill,
}

/// The spill file's fate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spill {
    /// Nothing spilled.
    None,
    /// The whole stream is in the spill file.
    Complete {
        /// Its size.
        bytes: u64,
    },
    /// The spill file stopped early.
    Partial {
        /// How much it holds.
        bytes: u64,
        /// Why it stopped.
        stop: SpillStop,
    },
}

/// Why a spill file stopped growing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpillStop {
    /// It reached its cap.
    CapReached,
    /// Writing it failed.
    WriteFailed,
}

/// Where a task is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Its leader runs.
    Running,
    /// Termination has begun, for this cause.
    Terminating(EndCause),
    /// It ended.
    Finished(ExitInfo),
}

/// A task as `list` shows it. Deliberately no owner field.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    /// Its id.
    pub id: TaskId,
    /// Its command (at most 4 KiB of it).
    pub command: String,
    /// Whether it was started in the background.
    pub background: bool,
    /// When it started.
    pub started_at: SystemTime,
    /// Bytes produced so far.
    pub output_bytes: u64,
    /// Its state.
    pub state: TaskState,
}

/// A stateless read of a task's stream: the same arguments give the same bytes.
#[derive(Clone, Debug)]
pub struct OutputChunk {
    /// The bytes.
    pub bytes: Bytes,
    /// The offset of `bytes[0]`.
    pub start: u64,
    /// `start + bytes.len()`.
    pub next: u64,
    /// Bytes produced so far.
    pub total: u64,
    /// Bytes between the requested offset and `start` that are no longer available.
    pub skipped: u64,
    /// Set once the task finished, from the same snapshot as the bytes.
    pub exit: Option<ExitInfo>,
}

/// A background task finished.
#[derive(Clone, Debug)]
pub struct TaskDone {
    /// Its id.
    pub id: TaskId,
    /// Its command.
    pub command: String,
    /// How it ended.
    pub exit: ExitInfo,
}
