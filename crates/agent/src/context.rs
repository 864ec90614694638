//! The context service: builds the system message an agent sends — a prompt, the
//! environment, the project's instructions, the caller's text — as an
//! [`InstructionsRecord`] the loop writes before it is used.
//!
//! Both front ends get the same context because the agent loop asks this service, not the
//! front end: `dsh run` and `dsh acp` differ only in the [`Audience`] and the caller's prompt
//! they put in the agent's options.

use std::path::PathBuf;

use async_trait::async_trait;

use crate::instructions::{Audience, CallerPrompt, InstructionsRecord};

/// A tool as the system prompt mentions it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolBrief {
    /// The tool's name.
    pub name: String,
    /// What the prompt says about using it ([`dsh_tools::Tool::guidance`]).
    pub guidance: Option<String>,
}

/// What one session's context is built for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextRequest {
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// The model's id.
    pub model: String,
    /// The tools offered, in the registry's order.
    pub tools: Vec<ToolBrief>,
    /// Who reads the answers.
    pub audience: Audience,
    /// The caller's own instructions.
    pub caller: Option<CallerPrompt>,
}

impl ContextRequest {
    /// A request for `cwd` with no tools, an empty model id, a terminal audience and no
    /// caller prompt.
    pub fn new(cwd: impl Into<PathBuf>) -> ContextRequest {
        ContextRequest {
            cwd: cwd.into(),
            model: String::new(),
            tools: Vec::new(),
            audience: Audience::Terminal,
            caller: None,
        }
    }
}

/// The context could not be built. Problems with one instruction file are warnings in the
/// record, never this error; this is for what the user configured explicitly and cannot be
/// honoured (an unreadable `system_prompt_file`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the agent's context could not be built: {message}")]
pub struct ContextError {
    /// What went wrong, naming the file or setting.
    pub message: String,
}

/// The context service: `scope.get::<dyn ContextBuilder>()`. Without one the loop sends only
/// the caller's prompt.
#[async_trait]
pub trait ContextBuilder: Send + Sync + 'static {
    /// Builds the system message for `request`. Reads the disk; never blocks the runtime
    /// for long (a slow `git` is given up on, not waited for).
    async fn build(&self, request: ContextRequest) -> Result<InstructionsRecord, ContextError>;
}
