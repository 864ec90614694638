//! `ShellLocalPlugin`: provides the executor as `dyn ShellExecutor` on its scope and disposes
//! it with that scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_shell::{ProcessContainment, ShellExecutor};

use crate::config::LocalShellConfig;
use crate::executor::LocalShellExecutor;

/// The plugin named `shell-local`. A reload disposes the old executor (every task of it ends)
/// and builds a fresh one; task ids continue from the process-wide counter.
#[derive(Clone, Debug, Default)]
pub struct ShellLocalPlugin {
    config: LocalShellConfig,
}

impl ShellLocalPlugin {
    /// A plugin that builds its executor from `config`.
    pub fn new(config: LocalShellConfig) -> ShellLocalPlugin {
        ShellLocalPlugin { config }
    }
}

#[async_trait]
impl Plugin for ShellLocalPlugin {
    fn name(&self) -> &str {
        "shell-local"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let executor = LocalShellExecutor::new(self.config.clone())?;
        scope.provide::<dyn ShellExecutor>(executor.clone())?;
        scope.provide::<dyn ProcessContainment>(executor.clone())?;
        // The concrete type too, for a host's forced teardown (`kill_all`).
        scope.provide::<LocalShellExecutor>(executor.clone())?;
        let disposing: Arc<LocalShellExecutor> = executor;
        scope.add_disposer(move || async move { disposing.dispose().await })?;
        Ok(())
    }
}
