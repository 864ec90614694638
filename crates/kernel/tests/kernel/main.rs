//! The kernel's integration suite: one test binary, one module per concept.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod events;
mod hygiene;
mod lifecycle;
mod ownership;
mod plugins;
mod reload;
mod scopes;
mod services;
mod support;
mod tasks;
mod tasks_support;
