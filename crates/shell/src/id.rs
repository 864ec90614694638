//! Task ids: `sh-<run>-<n>`. `<run>` names the dsh process that started the task — four
//! characters drawn at random once per process — and `<n>` counts that process's tasks from 1,
//! never reused. A stored session keeps the ids its tasks had, and a resumed session runs in a
//! later process: so an id read from the log can never name a task of the process reading it,
//! and is recognised as belonging to an earlier run instead of being confused with a task that
//! happens to have the same number now. Ids of the first format, `sh-<n>`, read the same way.

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::num::NonZeroU64;
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The characters a run tag is drawn from: lowercase letters and digits, without the ones
/// easily misread (`i`, `l`, `o`, `u`).
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A process's tag; `None` for an id of the first format, which named no run.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Run(Option<[u8; 4]>);

impl Run {
    /// This process's tag, drawn on first use.
    fn current() -> Run {
        static CURRENT: OnceLock<[u8; 4]> = OnceLock::new();
        Run(Some(*CURRENT.get_or_init(|| {
            // The standard library's per-process random hash keys: no dependency for four
            // characters that only need to differ between runs.
            let mut bits = std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish();
            let mut tag = [0u8; 4];
            for c in &mut tag {
                *c = ALPHABET[(bits & 31) as usize];
                bits >>= 5;
            }
            tag
        })))
    }

    fn parse(text: &str) -> Option<Run> {
        let bytes: [u8; 4] = text.as_bytes().try_into().ok()?;
        bytes
            .iter()
            .all(|b| ALPHABET.contains(b))
            .then_some(Run(Some(bytes)))
    }
}

/// A task's id, unique across dsh processes (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct TaskId {
    run: Run,
    n: NonZeroU64,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

impl TaskId {
    /// The next id of the process. Providers call it only after a successful spawn, so a
    /// failed spawn consumes no id.
    pub fn allocate() -> TaskId {
        loop {
            if let Some(n) = NonZeroU64::new(NEXT.fetch_add(1, Ordering::Relaxed)) {
                return TaskId {
                    run: Run::current(),
                    n,
                };
            }
        }
    }

    /// The task's number within its run.
    pub fn get(self) -> u64 {
        self.n.get()
    }

    /// Whether this process started the task; false for an id of an earlier run (read from a
    /// stored session), which no executor of this process can hold.
    pub fn is_of_this_run(self) -> bool {
        self.run == Run::current()
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.run.0 {
            Some(tag) => write!(
                f,
                "sh-{}-{}",
                std::str::from_utf8(&tag).unwrap_or("????"),
                self.n
            ),
            None => write!(f, "sh-{}", self.n),
        }
    }
}

/// Why a string is not a task id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a task id: task ids look like sh-k3f9-1")]
pub struct TaskIdError {
    /// The rejected text.
    pub text: String,
}

impl FromStr for TaskId {
    type Err = TaskIdError;

    /// Accepts exactly `sh-<run>-<n>` (a four-character tag) or the first format `sh-<n>`,
    /// with `n ≥ 1` in canonical decimal (no sign, no leading zero).
    fn from_str(text: &str) -> Result<TaskId, TaskIdError> {
        let bad = || TaskIdError {
            text: text.to_owned(),
        };
        let rest = text.strip_prefix("sh-").ok_or_else(bad)?;
        let (run, digits) = match rest.split_once('-') {
            Some((tag, digits)) => (Run::parse(tag).ok_or_else(bad)?, digits),
            None => (Run(None), rest),
        };
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(bad());
        }
        let n: u64 = digits.parse().map_err(|_| bad())?;
        let n = NonZeroU64::new(n).ok_or_else(bad)?;
        Ok(TaskId { run, n })
    }
}
