//! Task ids: `sh-1`, `sh-2`, … from one process-wide counter, never reused.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// A task's id, unique within one dsh process across executor instances.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct TaskId(NonZeroU64);

static NEXT: AtomicU64 = AtomicU64::new(1);

impl TaskId {
    /// The next id of the process. Providers call it only after a successful spawn, so a
    /// failed spawn consumes no id.
    pub fn allocate() -> TaskId {
        loop {
            if let Some(n) = NonZeroU64::new(NEXT.fetch_add(1, Ordering::Relaxed)) {
                return TaskId(n);
            }
        }
    }

    /// The number after `sh-`.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sh-{}", self.0)
    }
}

/// Why a string is not a task id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a task id: task ids look like sh-1, sh-2, …")]
pub struct TaskIdError {
    /// The rejected text.
    pub text: String,
}

impl FromStr for TaskId {
    type Err = TaskIdError;

    /// Accepts exactly `sh-<n>` with `n ≥ 1` in canonical decimal (no sign, no leading zero).
    fn from_str(text: &str) -> Result<TaskId, TaskIdError> {
        let bad = || TaskIdError {
            text: text.to_owned(),
        };
        let digits = text.strip_prefix("sh-").ok_or_else(bad)?;
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let n: u64 = digits.parse().map_err(|_| bad())?;
        NonZeroU64::new(n).map(TaskId).ok_or_else(bad)
    }
}
