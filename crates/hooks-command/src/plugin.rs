//! `HooksPlugin`: provides the configured hooks as the scope's `dyn Hooks`.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_hooks::Hooks;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_shell::{SandboxPolicy, ShellExecutor};

use crate::config::HookConfig;
use crate::run::CommandHooks;

/// The plugin named `hooks-command`: needs a shell executor on the scope.
pub struct HooksPlugin {
    config: HookConfig,
    sandbox: SandboxPolicy,
}

impl HooksPlugin {
    /// Hooks of `config`, sandboxed handlers under `sandbox` (the session's commands' own).
    pub fn new(config: HookConfig, sandbox: SandboxPolicy) -> HooksPlugin {
        HooksPlugin { config, sandbox }
    }
}

#[async_trait]
impl Plugin for HooksPlugin {
    fn name(&self) -> &str {
        "hooks-command"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let executor = scope.require::<dyn ShellExecutor>()?;
        let hooks = CommandHooks::new(self.config.clone(), executor, self.sandbox.clone());
        scope.provide::<dyn Hooks>(Arc::new(hooks) as Arc<dyn Hooks>)?;
        Ok(())
    }
}
