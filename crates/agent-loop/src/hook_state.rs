//! The hooks a session runs now, kept on the agent between turns (the hooks module reads
//! them again at each).

use std::sync::Arc;

use dsh_hooks::{Hooks, ProjectFile};

/// The hooks a session runs now, and the project files whose `SessionStart` ran.
#[derive(Default)]
pub(crate) struct SessionHooks {
    /// What runs; `None` without a hooks source.
    pub(crate) current: Option<Arc<dyn Hooks>>,
    /// The project files whose `SessionStart` handlers ran in this agent's life.
    pub(crate) started: Vec<ProjectFile>,
    /// How the session came to start (`startup` or `resume`), once it did.
    pub(crate) source: Option<&'static str>,
}
