//! dsh-llm's suite: the stream checker, request validation, errors, the outcome table, and a
//! toy provider run through the checker.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod checker;
mod errors;
mod toy;
mod validate;
