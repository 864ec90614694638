//! dsh-llm-replay's suite (llm spec T-50..T-62).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod convert;
mod parse;
mod play;
