//! `TodoPlugin`: registers the `todo` tool on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_tools::ToolRegistry;

use crate::todo::TodoTool;

/// The plugin named `tool-todo`.
#[derive(Clone, Copy, Debug, Default)]
pub struct TodoPlugin;

#[async_trait]
impl Plugin for TodoPlugin {
    fn name(&self) -> &str {
        "tool-todo"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry = scope.require::<dyn ToolRegistry>()?;
        registry.register(scope, Arc::new(TodoTool))?;
        Ok(())
    }
}
