//! dsh-llm-replay's suite.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod parse;
mod play;
