//! Seam role: definition (layer 1) — the session: ids, the event vocabulary, the live
//! `SessionStore` and the `SessionPersistence` trait.
//!
//! A session is an immutable header plus an append-only log of events, and that log is dsh's one
//! durable state: the agent derives model history from it, the ACP bridge renders and replays it,
//! persistence stores it. The session id is also the agent id and the shell owner token.
//!
//! Invariants this crate will hold (session spec SE-*, SP-*):
//! - events are appended synchronously, in memory, in one total order per session;
//! - a live id is unique in the store, checked when a session is entered;
//! - `SessionStore::flush` is the durability barrier; observers are contained;
//! - persistence providers implement `SessionPersistence` and share one load and repair rule.
//!
//! Status: not implemented yet. The issue "Session store and durable JSONL persistence" fills this
//! crate; until then it exports nothing.
#![deny(missing_docs)]
