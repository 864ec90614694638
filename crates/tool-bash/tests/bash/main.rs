//! dsh-tool-bash's integration suite: the tools over a real local executor (reached through
//! dsh-test-support), real bash processes, fake callers built with `ToolContext::for_caller`,
//! and real agents driven by the replay model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agents;
mod background;
mod foreground;
mod wiring;
