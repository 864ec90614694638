//! Integration tests of the local shell executor: real bash processes, real files in temp
//! directories, `/proc` scans for what a test started.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod escapees;
mod lifecycle;
mod output;
mod processes;
mod requests;
mod termination;
mod watchdog;
