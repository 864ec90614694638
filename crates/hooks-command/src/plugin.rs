//! `HooksPlugin`: provides the sessions' hooks as the scope's `dyn HookSource`.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_hooks::HookSource;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_shell::{SandboxPolicy, ShellExecutor};

use crate::config::HookConfig;
use crate::source::ProjectHooks;
use crate::trust::TrustFile;

/// The plugin named `hooks-command`: needs a shell executor on the scope.
pub struct HooksPlugin {
    user: HookConfig,
    claude: bool,
    data_dir: PathBuf,
    sandbox: SandboxPolicy,
}

impl HooksPlugin {
    /// The user's hooks `user`, with the project files trusted in `data_dir`'s trust file
    /// (`.claude/settings.json` among them when `claude`); sandboxed handlers under
    /// `sandbox` (the session's commands' own).
    pub fn new(
        user: HookConfig,
        claude: bool,
        data_dir: PathBuf,
        sandbox: SandboxPolicy,
    ) -> HooksPlugin {
        HooksPlugin {
            user,
            claude,
            data_dir,
            sandbox,
        }
    }
}

#[async_trait]
impl Plugin for HooksPlugin {
    fn name(&self) -> &str {
        "hooks-command"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let executor = scope.require::<dyn ShellExecutor>()?;
        let source = ProjectHooks::new(
            self.user.clone(),
            self.claude,
            TrustFile::new(&self.data_dir),
            executor,
            self.sandbox.clone(),
        );
        scope.provide::<dyn HookSource>(Arc::new(source) as Arc<dyn HookSource>)?;
        Ok(())
    }
}
