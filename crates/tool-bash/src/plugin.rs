//! `BashToolsPlugin`: registers the three tools and one completion subscription on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_shell::ShellExecutor;
use dsh_tools::{Tool, ToolRegistry};

use crate::bash::BashTool;
use crate::config::ToolBashConfig;
use crate::notice;
use crate::output_tool::{BashKillTool, BashOutputTool};
use crate::shared::Shared;

/// The plugin named `tool-bash`. Its state is its configuration and its registrations only, so
/// reloading it changes no task, owner or id.
#[derive(Clone, Debug, Default)]
pub struct BashToolsPlugin {
    config: ToolBashConfig,
}

impl BashToolsPlugin {
    /// A plugin with `config`.
    pub fn new(config: ToolBashConfig) -> BashToolsPlugin {
        BashToolsPlugin { config }
    }
}

#[async_trait]
impl Plugin for BashToolsPlugin {
    fn name(&self) -> &str {
        "tool-bash"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        // Both looked up before anything is registered: a missing one registers nothing.
        let registry = scope.require::<dyn ToolRegistry>()?;
        let executor = scope.require::<dyn ShellExecutor>()?;
        let shared = Shared {
            scope: scope.downgrade(),
            config: self.config.clone(),
        };
        let tools: [Arc<dyn Tool>; 3] = [
            Arc::new(BashTool {
                shared: shared.clone(),
            }),
            Arc::new(BashOutputTool {
                shared: shared.clone(),
            }),
            Arc::new(BashKillTool { shared }),
        ];
        for tool in tools {
            registry.register(scope, tool)?;
        }
        let subscription = executor.on_task_done(notice::listener(scope.downgrade()));
        scope.add_disposer(move || async move { drop(subscription) })?;
        Ok(())
    }
}
