//! The runtime: a root scope and the table of loaded plugins.
//!
//! Each plugin gets its own child scope of the root (`root/plugin:<name>`). Load, unload and
//! reload of one plugin are serialised by marking its slot busy (an overlapping operation on
//! the same name fails with `PluginBusy`); the table lock is never held across an await, so a
//! plugin's `apply` may itself load other plugins.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use parking_lot::Mutex;

use crate::contain::panic_message;
use crate::error::KernelError;
use crate::plugin::Plugin;
use crate::scope::Scope;

/// Loads, unloads and reloads plugins over one scope tree, and shuts them down in reverse load
/// order.
pub struct Runtime {
    root: Scope,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// In load order. A reloaded plugin keeps its slot, so shutdown still disposes it where it
    /// was first loaded: after the consumers loaded later, before the providers loaded earlier.
    slots: Vec<Slot>,
    shutting_down: bool,
}

struct Slot {
    name: String,
    /// `None` while a load, unload or reload of this plugin is in progress.
    scope: Option<Scope>,
}

impl Table {
    fn index(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    fn remove(&mut self, name: &str) {
        if let Some(i) = self.index(name) {
            self.slots.remove(i);
        }
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

impl Runtime {
    /// A runtime with an empty root scope and no plugins.
    pub fn new() -> Runtime {
        Runtime {
            root: Scope::new_root("root"),
            table: Mutex::new(Table::default()),
        }
    }

    /// The root scope. Effects registered here live until [`Runtime::shutdown`].
    pub fn scope(&self) -> &Scope {
        &self.root
    }

    /// Names of the loaded plugins, in load order (busy ones excluded).
    pub fn plugins(&self) -> Vec<String> {
        let table = self.table.lock();
        table
            .slots
            .iter()
            .filter(|s| s.scope.is_some())
            .map(|s| s.name.clone())
            .collect()
    }

    /// Loads `plugin`: creates its scope and applies it. If `apply` fails or panics, the scope
    /// is disposed (nothing stays registered) and the error is returned.
    pub async fn load(&self, plugin: impl Plugin) -> Result<(), KernelError> {
        let name = checked_name(&plugin)?;
        {
            let mut table = self.table.lock();
            if table.shutting_down {
                return Err(KernelError::ShuttingDown { name });
            }
            if table.index(&name).is_some() {
                return Err(KernelError::DuplicatePlugin { name });
            }
            table.slots.push(Slot {
                name: name.clone(),
                scope: None,
            });
        }
        self.apply_into_slot(&plugin, name).await
    }

    /// Unloads the plugin called `name`: disposes its scope (its effects last-in-first-out).
    pub async fn unload(&self, name: &str) -> Result<(), KernelError> {
        let scope = self.take_for_update(name)?;
        scope.dispose().await;
        self.table.lock().remove(name);
        Ok(())
    }

    /// Replaces the loaded plugin of the same name: disposes the old instance's scope, then
    /// applies `plugin` in a fresh scope, keeping its place in the load order. If the new
    /// `apply` fails, the plugin ends up unloaded and the error says so.
    pub async fn reload(&self, plugin: impl Plugin) -> Result<(), KernelError> {
        let name = checked_name(&plugin)?;
        let old = self.take_for_update(&name)?;
        old.dispose().await;
        self.apply_into_slot(&plugin, name).await
    }

    /// Disposes every plugin in reverse load order, then the root scope. Further loads fail
    /// with [`KernelError::ShuttingDown`]. Idempotent.
    pub async fn shutdown(&self) {
        let scopes: Vec<Scope> = {
            let mut table = self.table.lock();
            table.shutting_down = true;
            table
                .slots
                .iter_mut()
                .rev()
                .filter_map(|s| s.scope.take())
                .collect()
        };
        for scope in scopes {
            scope.dispose().await;
        }
        self.table.lock().slots.clear();
        self.root.dispose().await;
    }

    /// Marks the slot of `name` busy and hands out its scope.
    fn take_for_update(&self, name: &str) -> Result<Scope, KernelError> {
        let mut table = self.table.lock();
        let index = table
            .index(name)
            .ok_or_else(|| KernelError::UnknownPlugin {
                name: name.to_owned(),
            })?;
        table.slots[index]
            .scope
            .take()
            .ok_or_else(|| KernelError::PluginBusy {
                name: name.to_owned(),
            })
    }

    /// Applies `plugin` in a fresh child scope and records it in its (busy) slot; on failure
    /// the slot is removed.
    async fn apply_into_slot(&self, plugin: &dyn Plugin, name: String) -> Result<(), KernelError> {
        let scope = match self.root.child(&format!("plugin:{name}")) {
            Ok(scope) => scope,
            Err(_) => {
                self.table.lock().remove(&name);
                return Err(KernelError::ShuttingDown { name });
            }
        };
        let failure = match AssertUnwindSafe(plugin.apply(&scope)).catch_unwind().await {
            Ok(Ok(())) => None,
            Ok(Err(source)) => Some(KernelError::PluginApply {
                name: name.clone(),
                source,
            }),
            Err(payload) => Some(KernelError::PluginPanicked {
                name: name.clone(),
                message: panic_message(payload.as_ref()),
            }),
        };
        if let Some(err) = failure {
            tracing::error!(plugin = %name, "{err}");
            scope.dispose().await;
            self.table.lock().remove(&name);
            return Err(err);
        }
        let accepted = {
            let mut table = self.table.lock();
            match table.index(&name) {
                Some(i) if !table.shutting_down => {
                    table.slots[i].scope = Some(scope.clone());
                    true
                }
                _ => false,
            }
        };
        if accepted {
            tracing::debug!(plugin = %name, "plugin applied");
            Ok(())
        } else {
            // Shutdown began while `apply` ran: undo it rather than leave it unowned.
            scope.dispose().await;
            self.table.lock().remove(&name);
            Err(KernelError::ShuttingDown { name })
        }
    }
}

fn checked_name(plugin: &dyn Plugin) -> Result<String, KernelError> {
    let name = plugin.name();
    if name.is_empty() || name.contains('/') {
        return Err(KernelError::InvalidPluginName {
            name: name.to_owned(),
        });
    }
    Ok(name.to_owned())
}
