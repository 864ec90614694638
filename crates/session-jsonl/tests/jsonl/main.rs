//! dsh-session-jsonl's integration suite: the shared persistence contract, the bridge wired
//! to a real store, and the JSONL-specific rules (layout, config, locks, write-behind,
//! failure injection).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bridge;
mod contract;
mod index;
mod plugin;
mod provider;
