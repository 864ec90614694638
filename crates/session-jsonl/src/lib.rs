//! Seam role: provider of `dsh_session::SessionPersistence` — durable JSONL files, the embedded
//! default.
//!
//! One file per session, written append-only with batched write-behind, fsync at every flush
//! barrier, an advisory lock per open session, header-only listing and torn-tail repair on cold
//! load.
//!
//! Invariants this crate will hold (session spec SJ-*): nothing on disk before the first append; a
//! failed write never loses an earlier flushed event; corruption before the last committed turn is
//! an error naming file and line, and the file is left untouched.
//!
//! Status: not implemented yet. The issue "Session store and durable JSONL persistence" fills this
//! crate; until then it exports nothing.
#![deny(missing_docs)]
