//! The bridge in process: `AcpBridge::serve` over an in-memory pipe with the real session,
//! persistence, replay-model and agent-loop providers, and the manifest rules.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod faults;
mod manifest;
mod serve;
mod support;
