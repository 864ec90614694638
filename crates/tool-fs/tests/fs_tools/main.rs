//! dsh-tool-fs's integration suite: the five tools over the local provider, on real files in
//! temporary directories, called as a fake agent would.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod edit;
mod read_write;
mod search;
