//! When a search stops early: the call was cancelled, or it ran out of its time budget.
//!
//! A search runs on a blocking thread that no one can interrupt, so it asks [`Stop::now`]
//! itself: before each file of the walk, at every buffer it reads inside a file
//! ([`Watched`]), and at every match. A cancelled or timed-out search therefore ends within
//! one buffer's work and frees what it held; only a single line's match is beyond reach,
//! which the regex size limits of `grep` bound.

use std::io::{self, Read};
use std::time::{Duration, Instant};

use dsh_kernel::CancellationToken;

/// Why a search stopped before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The call was cancelled: its result is never shown.
    Cancelled,
    /// The time budget ran out: what was found so far is the answer.
    OutOfTime(Duration),
}

/// The two reasons to stop one call, checked together.
#[derive(Clone)]
pub(crate) struct Stop {
    cancel: CancellationToken,
    budget: Duration,
    deadline: Instant,
}

impl Stop {
    /// A stop for a call starting now with `budget`.
    pub(crate) fn new(cancel: CancellationToken, budget: Duration) -> Stop {
        Stop {
            cancel,
            budget,
            deadline: Instant::now() + budget,
        }
    }

    /// Whether, and why, the search must stop now.
    pub(crate) fn now(&self) -> Option<Stopped> {
        if self.cancel.is_cancelled() {
            Some(Stopped::Cancelled)
        } else if Instant::now() >= self.deadline {
            Some(Stopped::OutOfTime(self.budget))
        } else {
            None
        }
    }
}

impl Stopped {
    /// The note under what a timed-out search found, or the error of a cancelled one.
    pub(crate) fn note(self, tool: &str) -> String {
        match self {
            Stopped::Cancelled => format!("The {tool} was cancelled."),
            Stopped::OutOfTime(budget) => format!(
                "[The {tool} stopped after {} s, its time limit: only what it found by then is above. Narrow it with path, glob or type, or a simpler pattern.]",
                budget.as_secs_f64()
            ),
        }
    }
}

/// A file read for a search, which fails once the search must stop: the searcher then gives
/// up on the file at its next buffer, however long the file is.
pub(crate) struct Watched<'a, R> {
    pub inner: R,
    pub stop: &'a Stop,
}

impl<R: Read> Read for Watched<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.now().is_some() {
            // Not `Interrupted`: readers retry that kind.
            return Err(io::Error::other("the search stopped"));
        }
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_says_cancelled_before_out_of_time() {
        let cancel = CancellationToken::new();
        let stop = Stop::new(cancel.clone(), Duration::from_secs(3600));
        assert_eq!(stop.now(), None);
        let spent = Stop::new(cancel.clone(), Duration::ZERO);
        assert_eq!(spent.now(), Some(Stopped::OutOfTime(Duration::ZERO)));
        cancel.cancel();
        assert_eq!(spent.now(), Some(Stopped::Cancelled));
        assert_eq!(stop.now(), Some(Stopped::Cancelled));
    }

    #[test]
    fn a_watched_reader_fails_at_the_first_read_after_the_stop() {
        let cancel = CancellationToken::new();
        let stop = Stop::new(cancel.clone(), Duration::from_secs(3600));
        let mut reader = Watched {
            inner: io::repeat(b'a'),
            stop: &stop,
        };
        let mut buf = [0u8; 8];
        assert_eq!(reader.read(&mut buf).unwrap(), 8);
        cancel.cancel();
        let err = reader.read(&mut buf).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Other);
    }
}
