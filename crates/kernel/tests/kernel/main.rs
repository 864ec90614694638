//! The kernel's integration suite: one test binary, one module per concept.

mod events;
mod plugins;
mod reload;
mod scopes;
mod services;
mod support;
mod tasks;
