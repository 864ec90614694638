//! Seam role: provider — the agent's context from local disk. [`ContextPlugin`] provides
//! `dyn ContextBuilder`: the built-in system prompt (or a configured prompt file), the
//! environment block, the user's and the project's instruction files, and the caller's own
//! text, composed into one system message and described by an `InstructionsRecord`.
//!
//! # Invariants
//!
//! - **What is sent is described.** Every byte of the text comes from a source listed in the
//!   record with its hash (the built-in prompt, a file, the caller), or from the environment
//!   the record holds.
//! - **A bad instruction file never fails a session.** A file that is unreadable, not UTF-8
//!   or over the size limit is skipped or cut, with a note in the text where it was cut and a
//!   warning in the record. Only what the user configured explicitly (`system_prompt_file`)
//!   fails the build when it cannot be read.
//! - **Nothing in the text changes within a day** but the git head and dirtiness, so a prompt
//!   prefix stays cacheable; the date has day precision.
//! - **Bounded.** Instruction files share a 32 KiB budget, each file is read at most 1 MiB
//!   deep, and `git status` is given up on after its timeout.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use dsh_agent::{ContextBuilder, ContextRequest};
//! use dsh_agent_context::{ContextConfig, LocalContext, Today};
//!
//! let dir = std::env::temp_dir();
//! let config = ContextConfig { today: Today::Fixed("2026-12-04".into()), ..ContextConfig::default() };
//! let record = LocalContext::new(config).build(ContextRequest::new(&dir)).await.unwrap();
//! assert!(record.text.starts_with("You are dsh, a coding agent."));
//! assert!(record.text.contains("- Date: 2026-12-04"));
//! # });
//! ```
#![deny(missing_docs)]

mod builder;
mod compose;
mod config;
mod discover;
mod environment;
mod git;
mod prompt;
mod source;

use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent::ContextBuilder;
use dsh_kernel::{BoxError, Plugin, Scope};

pub use builder::LocalContext;
pub use config::{ContextConfig, INSTRUCTIONS_LIMIT_BYTES, Today};
pub use prompt::BUILTIN_PROMPT;

/// The context service as a kernel plugin named `agent-context`.
pub struct ContextPlugin {
    config: ContextConfig,
}

impl ContextPlugin {
    /// A plugin building contexts with `config`.
    pub fn new(config: ContextConfig) -> ContextPlugin {
        ContextPlugin { config }
    }
}

#[async_trait]
impl Plugin for ContextPlugin {
    fn name(&self) -> &str {
        "agent-context"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let service: Arc<dyn ContextBuilder> = Arc::new(LocalContext::new(self.config.clone()));
        scope.provide::<dyn ContextBuilder>(service)?;
        Ok(())
    }
}
