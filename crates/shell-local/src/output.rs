//! One task's output: the in-memory tail (a ring of exactly the last `cap` bytes), the total,
//! and what the spill file holds. Readable bytes are `[0, spilled) ∪ [total − ring, total)`.

use bytes::Bytes;
use dsh_shell::{Spill, SpillStop};

/// The last `cap` bytes of a stream.
#[derive(Debug)]
pub(crate) struct Ring {
    buf: Vec<u8>,
    cap: usize,
    /// Index of the oldest byte once `buf` is full.
    head: usize,
}

impl Ring {
    pub fn new(cap: usize) -> Ring {
        Ring {
            buf: Vec::new(),
            cap,
            head: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn push(&mut self, data: &[u8]) {
        if data.len() >= self.cap {
            self.buf.clear();
            self.buf.extend_from_slice(&data[data.len() - self.cap..]);
            self.head = 0;
            return;
        }
        let room = self.cap - self.buf.len();
        let fits = room.min(data.len());
        self.buf.extend_from_slice(&data[..fits]);
        // Only reached once full: overwrite the oldest bytes in place, in at most two copies.
        let mut rest = &data[fits..];
        while !rest.is_empty() {
            let n = rest.len().min(self.cap - self.head);
            self.buf[self.head..self.head + n].copy_from_slice(&rest[..n]);
            self.head = (self.head + n) % self.cap;
            rest = &rest[n..];
        }
    }

    /// Bytes `[from, to)` counted from the ring's oldest byte.
    pub fn copy(&self, from: usize, to: usize) -> Vec<u8> {
        let len = self.buf.len();
        let (older, newer) = if len < self.cap {
            (&self.buf[..], &[][..])
        } else {
            let (a, b) = self.buf.split_at(self.head);
            (b, a)
        };
        let mut out = Vec::with_capacity(to.saturating_sub(from));
        let to = to.min(len);
        if from < older.len() {
            out.extend_from_slice(&older[from..to.min(older.len())]);
        }
        if to > older.len() {
            let start = from.saturating_sub(older.len());
            out.extend_from_slice(&newer[start..to - older.len()]);
        }
        out
    }

    pub fn all(&self) -> Vec<u8> {
        self.copy(0, self.buf.len())
    }
}

/// A task's stream as readers see it.
#[derive(Debug)]
pub(crate) struct Output {
    pub ring: Ring,
    pub total: u64,
    /// Bytes `[0, spilled)` are in the spill file.
    pub spilled: u64,
    /// Deleted from disk when dropped: on release, eviction, removal or the task's end.
    pub spill_file: Option<tempfile::TempPath>,
    pub spill_started: bool,
    pub spill_stop: Option<SpillStop>,
}

impl Output {
    pub fn new(cap: usize) -> Output {
        Output {
            ring: Ring::new(cap),
            total: 0,
            spilled: 0,
            spill_file: None,
            spill_started: false,
            spill_stop: None,
        }
    }

    pub fn ring_start(&self) -> u64 {
        self.total - self.ring.len() as u64
    }

    pub fn truncated(&self) -> bool {
        self.total > self.ring.cap as u64
    }

    pub fn spill(&self) -> Spill {
        match (self.spill_started, self.spill_stop) {
            (false, _) => Spill::None,
            (true, None) => Spill::Complete {
                bytes: self.spilled,
            },
            (true, Some(stop)) => Spill::Partial {
                bytes: self.spilled,
                stop,
            },
        }
    }

    /// The tail as `RunOutput` reports it.
    pub fn tail(&self) -> (Bytes, u64) {
        (Bytes::from(self.ring.all()), self.ring_start())
    }
}
