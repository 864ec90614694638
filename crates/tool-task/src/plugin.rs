//! `TaskPlugin`: registers the `task` tool on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_agent::record::AGENT_SUBAGENT;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::{EventClass, EventType, SessionStore};
use dsh_tools::ToolRegistry;

use crate::task::{TaskConfig, TaskTool};

/// The plugin named `tool-task`.
#[derive(Clone, Debug, Default)]
pub struct TaskPlugin {
    config: TaskConfig,
}

impl TaskPlugin {
    /// The plugin with `config`.
    pub fn new(config: TaskConfig) -> TaskPlugin {
        TaskPlugin { config }
    }
}

#[async_trait]
impl Plugin for TaskPlugin {
    fn name(&self) -> &str {
        "tool-task"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry = scope.require::<dyn ToolRegistry>()?;
        // The parent's log says when a child started and ended: a kind an older dsh skips.
        if let Some(store) = scope.get::<SessionStore>() {
            let kind = EventType::new(AGENT_SUBAGENT)?;
            store.vocabulary().register(&kind, EventClass::Ignorable)?;
        }
        let tool = TaskTool::new(scope.downgrade(), self.config.clone());
        registry.register(scope, Arc::new(tool))?;
        Ok(())
    }
}
