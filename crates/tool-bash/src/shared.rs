//! What the three tools share: the plugin's scope (weakly, so a stored tool cannot keep a
//! disposed plugin alive) and the configuration. The executor is looked up on every call, so
//! a reloaded provider is found; no task table, owner map or cursor is kept here.

use std::sync::Arc;

use dsh_kernel::WeakScope;
use dsh_shell::{ShellExecutor, TaskId};
use dsh_tools::{ToolContext, ToolError};

use crate::config::ToolBashConfig;
use crate::errors;

/// Where the tool's commands run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sandbox {
    /// In the configured sandbox.
    Confined,
    /// A sandbox is configured and this machine cannot apply it.
    Missing,
    /// None is configured (`full-access`).
    NotAsked,
}

#[derive(Clone, Debug)]
pub struct Shared {
    pub scope: WeakScope,
    pub config: ToolBashConfig,
}

impl Shared {
    /// Where commands run: in a sandbox when one is configured and the executor can apply it.
    pub fn sandbox(&self) -> Sandbox {
        if matches!(self.config.sandbox, dsh_shell::SandboxPolicy::FullAccess) {
            return Sandbox::NotAsked;
        }
        match self.executor().is_ok_and(|e| e.sandbox().is_ok()) {
            true => Sandbox::Confined,
            false => Sandbox::Missing,
        }
    }

    pub fn executor(&self) -> Result<Arc<dyn ShellExecutor>, ToolError> {
        let scope = self.scope.upgrade().filter(|s| s.is_active());
        let Some(scope) = scope else {
            return Err(errors::reloading());
        };
        scope
            .get::<dyn ShellExecutor>()
            .ok_or_else(errors::shutting_down)
    }
}

/// The caller's owner token: its agent id, or `None` outside any agent.
pub fn caller_token(cx: &ToolContext) -> Option<String> {
    cx.caller_id().map(|id| id.as_str().to_owned())
}

/// The access rule, applied before any executor call that names a task: an owned task is
/// reachable only by an equal token; a task without owner is open to every caller. Unknown
/// and foreign ids give the same answer.
pub fn reachable(
    executor: &dyn ShellExecutor,
    raw_id: &str,
    cx: &ToolContext,
) -> Result<TaskId, ToolError> {
    crate::args::check_task_id(raw_id)?;
    let id: TaskId = raw_id.parse().map_err(|_| errors::not_found(raw_id))?;
    if !id.is_of_this_run() {
        return Err(errors::earlier_run(raw_id));
    }
    match executor.owner_of(id) {
        None => Ok(id),
        Some(owner) if caller_token(cx).as_deref() == Some(owner.as_str()) => Ok(id),
        Some(_) => Err(errors::not_found(raw_id)),
    }
}
