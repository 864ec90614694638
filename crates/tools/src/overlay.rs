//! A session's own tools on top of the process's: what an agent sees when its front end
//! brought tools of its own (an editor's MCP servers).

use std::sync::Arc;

use dsh_kernel::Scope;

use crate::registry::{StandardToolRegistry, ToolRegistry, ToolRegistryError, ToolSet};
use crate::tool::Tool;

/// The process's registry (`base`) with tools of one session over it. A name the base
/// already holds cannot be registered here; a snapshot holds both.
pub struct OverlayToolRegistry {
    base: Arc<dyn ToolRegistry>,
    own: StandardToolRegistry,
}

impl OverlayToolRegistry {
    /// An overlay with no tools of its own yet.
    pub fn new(base: Arc<dyn ToolRegistry>) -> OverlayToolRegistry {
        OverlayToolRegistry {
            base,
            own: StandardToolRegistry::new(),
        }
    }
}

impl ToolRegistry for OverlayToolRegistry {
    fn register(&self, scope: &Scope, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let name = tool.name();
        if self.base.get(&name).is_some() {
            return Err(ToolRegistryError::Duplicate { name });
        }
        self.own.register(scope, tool)
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.own.get(name).or_else(|| self.base.get(name))
    }

    fn snapshot(&self) -> ToolSet {
        self.base.snapshot().merged(&self.own.snapshot())
    }
}

/// A registry without some of another's tools: what a child agent at the depth limit is
/// offered (its parent's tools but `task`). Registering through it is refused.
pub struct HidingToolRegistry {
    base: Arc<dyn ToolRegistry>,
    hidden: Vec<String>,
}

impl HidingToolRegistry {
    /// `base` without the tools named in `hidden`.
    pub fn new(base: Arc<dyn ToolRegistry>, hidden: Vec<String>) -> HidingToolRegistry {
        HidingToolRegistry { base, hidden }
    }
}

impl ToolRegistry for HidingToolRegistry {
    fn register(&self, _scope: &Scope, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        Err(ToolRegistryError::ReadOnly { name: tool.name() })
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        match self.hidden.iter().any(|h| h == name) {
            true => None,
            false => self.base.get(name),
        }
    }

    fn snapshot(&self) -> ToolSet {
        self.base.snapshot().without(&self.hidden)
    }
}
