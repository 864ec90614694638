//! Seam role: support — test fixtures shared by the workspace: the persistence contract suite,
//! log capture, the SSE fixtures, the mock model server, process census helpers for tests
//! that check what a command left running, and the providers other crates' tests run
//! against ([`providers`]). The ACP driver, which needs the built binary, lives with the
//! end-to-end suites in `tests/`.
//!
//! The one non-root crate allowed to name providers, so that a crate's own tests reach
//! providers only through it (architecture invariant 4). Fixtures here panic on failure: they
//! are assertions, and a panic is how a test reports.
#![deny(missing_docs)]
// Fixtures are assertions: failing loudly is their job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod logs;
pub mod mock_model;
pub mod persistence_contract;
pub mod processes;
pub mod sse;

/// The real providers a crate's tests may run against, reached through this crate only.
pub mod providers {
    pub use dsh_agent_loop::{AgentLoopPlugin, LoopConfig};
    pub use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiPlugin};
    pub use dsh_llm_replay::{ReplayModel, ReplayPlugin, ReplayScript};
    pub use dsh_session_jsonl::{JsonlConfig, JsonlPersistence, JsonlPlugin};
    pub use dsh_shell_local::{LocalShellConfig, LocalShellExecutor, ShellLocalPlugin};
}
