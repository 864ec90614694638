//! Seam role: provider of dsh_llm::Model — a scripted, recorded model for tests, the ACP
//! conformance suite and the offline demo.
//!
//! A [`ReplayScript`] (JSON, version 1) lists entries; each `stream()` call validates the
//! request exactly as a real provider would, then takes the first unconsumed entry whose
//! matcher accepts it. Entries emit reasoning, text and tool calls with delays on the tokio
//! clock, and end with a finish, an error, a hang (cancellable or not) or a stall.
//!
//! Invariants:
//! - the model is always labelled replay: `info()` is `replay` / `replay:<name>`, so every
//!   surface that shows a model shows that the output is scripted;
//! - running out of entries is loud: a `protocol` error naming the script, the call and the
//!   last user message, logged at `error`;
//! - parsing is strict: unknown fields, empty strings and contradictory endings are refused
//!   with a line and column;
//! - the streams honour the model seam's contract (they pass `StreamChecker`).
#![deny(missing_docs)]

mod model;
mod plugin;
mod script;

pub use model::ReplayModel;
pub use plugin::ReplayPlugin;
pub use script::{Ending, Entry, Item, ItemKind, Matcher, ReplayScript, ScriptError};
