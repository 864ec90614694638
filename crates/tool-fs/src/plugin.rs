//! `FsToolsPlugin`: registers the five file tools on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_tools::{Tool, ToolRegistry};

use crate::config::ToolFsConfig;
use crate::edit::EditTool;
use crate::glob::GlobTool;
use crate::grep::GrepTool;
use crate::ledger::Ledger;
use crate::read::ReadTool;
use crate::write::WriteTool;

/// The plugin named `tool-fs`. The ledger of what each session read lives with the plugin:
/// a reload forgets it, and the model reads again before it edits.
#[derive(Clone, Debug, Default)]
pub struct FsToolsPlugin {
    config: ToolFsConfig,
}

impl FsToolsPlugin {
    /// A plugin with `config`.
    pub fn new(config: ToolFsConfig) -> FsToolsPlugin {
        FsToolsPlugin { config }
    }
}

#[async_trait]
impl Plugin for FsToolsPlugin {
    fn name(&self) -> &str {
        "tool-fs"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry = scope.require::<dyn ToolRegistry>()?;
        let ledger = Arc::new(Ledger::default());
        let config = &self.config;
        let tools: [Arc<dyn Tool>; 5] = [
            Arc::new(ReadTool {
                config: config.clone(),
                ledger: ledger.clone(),
            }),
            Arc::new(EditTool {
                config: config.clone(),
                ledger: ledger.clone(),
            }),
            Arc::new(WriteTool {
                config: config.clone(),
                ledger,
            }),
            Arc::new(GrepTool {
                config: config.clone(),
            }),
            Arc::new(GlobTool {
                config: config.clone(),
            }),
        ];
        for tool in tools {
            registry.register(scope, tool)?;
        }
        Ok(())
    }
}
