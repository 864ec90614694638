//! Seam role: support — the test support that runs real providers: the mock model server on
//! 127.0.0.1 (the wire format of an OpenAI-compatible server), the contract suite every
//! `SessionPersistence` provider runs and the crash injection both providers run
//! ([`session_fixtures`]), a fresh database on the tests' PostgreSQL ([`postgres`]), and the
//! providers other crates' tests run against ([`providers`]).
//!
//! The one non-root crate allowed to name providers, so that a crate's own tests reach
//! providers only through it (architecture invariant 4). Split from `dsh-test-support` so a
//! crate whose tests need only log capture or process helpers does not build every provider
//! and an HTTP stack. Fixtures here panic on failure: they are assertions, and a panic is
//! how a test reports.
#![deny(missing_docs)]
// Fixtures are assertions: failing loudly is their job.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod mock_model;
pub mod persistence_contract;
pub mod postgres;
pub mod recorded;
pub mod session_fixtures;

/// The real providers a crate's tests may run against, reached through this crate only.
pub mod providers {
    pub use dsh_agent_loop::{AgentLoopPlugin, LoopConfig};
    pub use dsh_fs_local::{FsLocalPlugin, LocalFiles, LocalFilesConfig};
    pub use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiPlugin};
    pub use dsh_llm_replay::{ReplayModel, ReplayPlugin, ReplayScript};
    pub use dsh_session_jsonl::{JsonlConfig, JsonlPersistence, JsonlPlugin};
    pub use dsh_session_postgres::{PostgresConfig, PostgresPersistence, PostgresPlugin};
    pub use dsh_shell_local::{LocalShellConfig, LocalShellExecutor, ShellLocalPlugin};
}
