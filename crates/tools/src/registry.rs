//! The tool registry: the spine every tool plugin registers into, and the immutable snapshots
//! the agent loop takes per step.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, KernelError, Plugin, Scope};
use parking_lot::Mutex;

use crate::tool::{Tool, ToolSchema};

/// Why a registration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistryError {
    /// The name does not match `^[A-Za-z0-9_-]{1,64}$`.
    #[error("invalid tool name {name:?}: a tool name is 1 to 64 of A-Z, a-z, 0-9, '_' and '-'")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A tool of that name is registered already.
    #[error("a tool named `{name}` is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The registering scope is closed.
    #[error(transparent)]
    Scope(#[from] KernelError),
    /// This registry is a view of another's and takes no tools of its own.
    #[error("`{name}` cannot be registered here: this registry only shows another's tools")]
    ReadOnly {
        /// The name.
        name: String,
    },
}

/// True for a name a model may call: 1 to 64 ASCII letters, digits, `_` and `-`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The registry service: `scope.get::<dyn ToolRegistry>()`.
pub trait ToolRegistry: Send + Sync + 'static {
    /// Registers `tool` until `scope` is disposed.
    fn register(&self, scope: &Scope, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError>;

    /// The tool registered under `name`, now.
    fn get(&self, name: &str) -> Option<Arc<dyn Tool>>;

    /// The registered tools as they are now; never changes afterwards.
    fn snapshot(&self) -> ToolSet;
}

/// An immutable set of tools, by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Arc<BTreeMap<String, Arc<dyn Tool>>>,
}

impl ToolSet {
    /// The tool called `name` in this set.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Every tool's schema, sorted by name (a stable prefix for providers' prompt caches).
    pub fn schemas(&self) -> Vec<ToolSchema> {
        self.tools.values().map(|t| t.schema()).collect()
    }

    /// This set without the tools named in `hidden`.
    pub fn without(&self, hidden: &[String]) -> ToolSet {
        let mut tools = (*self.tools).clone();
        tools.retain(|name, _| !hidden.contains(name));
        ToolSet {
            tools: Arc::new(tools),
        }
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// How many tools the set holds.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when the set holds no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// This set with `other`'s tools added (this set's tool wins a name both hold).
    pub fn merged(&self, other: &ToolSet) -> ToolSet {
        if other.is_empty() {
            return self.clone();
        }
        let mut tools = (*other.tools).clone();
        for (name, tool) in self.tools.iter() {
            tools.insert(name.clone(), tool.clone());
        }
        ToolSet {
            tools: Arc::new(tools),
        }
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// The standard in-memory registry.
#[derive(Default)]
pub struct StandardToolRegistry {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// Name → (registration id, tool).
    tools: BTreeMap<String, (u64, Arc<dyn Tool>)>,
    next: u64,
    /// The current snapshot, rebuilt lazily after a change.
    snapshot: Option<ToolSet>,
}

impl StandardToolRegistry {
    /// An empty registry.
    pub fn new() -> StandardToolRegistry {
        StandardToolRegistry::default()
    }
}

fn unregister(state: &Mutex<State>, name: &str, registration: u64) {
    let removed = {
        let mut state = state.lock();
        match state.tools.get(name) {
            Some((id, _)) if *id == registration => {
                // The old snapshot holds the tool too: both are dropped outside the lock.
                let snapshot = state.snapshot.take();
                (state.tools.remove(name), snapshot)
            }
            _ => (None, None),
        }
    };
    // A tool's `Drop` is foreign code.
    drop(removed);
}

impl ToolRegistry for StandardToolRegistry {
    fn register(&self, scope: &Scope, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let name = tool.name();
        if !valid_tool_name(&name) {
            return Err(ToolRegistryError::InvalidName { name });
        }
        let registration = {
            let mut state = self.state.lock();
            if state.tools.contains_key(&name) {
                return Err(ToolRegistryError::Duplicate { name });
            }
            state.next += 1;
            let registration = state.next;
            state.tools.insert(name.clone(), (registration, tool));
            state.snapshot = None;
            registration
        };
        let registry = Arc::downgrade(&self.state);
        let withdrawn = name.clone();
        let undo = scope.add_disposer(move || {
            if let Some(state) = registry.upgrade() {
                unregister(&state, &withdrawn, registration);
            }
            async {}
        });
        if let Err(err) = undo {
            unregister(&self.state, &name, registration);
            return Err(err.into());
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.state.lock().tools.get(name).map(|(_, t)| t.clone())
    }

    fn snapshot(&self) -> ToolSet {
        let mut state = self.state.lock();
        if let Some(snapshot) = &state.snapshot {
            return snapshot.clone();
        }
        let tools: BTreeMap<String, Arc<dyn Tool>> = state
            .tools
            .iter()
            .map(|(name, (_, tool))| (name.clone(), tool.clone()))
            .collect();
        let snapshot = ToolSet {
            tools: Arc::new(tools),
        };
        state.snapshot = Some(snapshot.clone());
        snapshot
    }
}

/// Provides the standard registry as `dyn ToolRegistry`. Load it before any tool plugin.
pub struct ToolRegistryPlugin;

#[async_trait]
impl Plugin for ToolRegistryPlugin {
    fn name(&self) -> &str {
        "tool-registry"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let registry: Arc<dyn ToolRegistry> = Arc::new(StandardToolRegistry::new());
        scope.provide::<dyn ToolRegistry>(registry)?;
        Ok(())
    }
}
