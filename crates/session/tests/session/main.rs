//! dsh-session's integration suite: one test binary, one module per concept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod codec;
mod header;
mod ids;
mod payloads;
mod repair;
mod store;
mod support;
mod vocabulary;
