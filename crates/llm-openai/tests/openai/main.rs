//! dsh-llm-openai's suite: the decoder over every fixture and split, and request encoding.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod answers;
mod decode;
mod encode;
mod hostile;
mod http;
