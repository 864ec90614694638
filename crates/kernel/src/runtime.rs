//! The runtime: a root scope and the table of loaded plugins.
//!
//! Each plugin gets its own child scope (`root/plugin:<name>`). A plugin loaded from inside
//! another plugin's `apply` (on the apply's own task) belongs to it: its scope is a child of
//! the outer plugin's, so it is unloaded and reloaded with it. Load, unload and reload of one
//! plugin are serialised by marking its slot busy (an overlapping operation on the same name
//! fails with `PluginBusy`); the table lock is never held across an await.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;

use futures::FutureExt;
use futures::future::join_all;
use parking_lot::Mutex;

use crate::contain::panic_message;
use crate::error::KernelError;
use crate::plugin::Plugin;
use crate::scope::{Effect, Scope, ScopePhase};

tokio::task_local! {
    /// The plugin whose `apply` this task is running: (its runtime, its name, its scope).
    static APPLYING: (usize, String, Scope);
}

/// Loads, unloads and reloads plugins over one scope tree, and shuts them down in reverse load
/// order. Dropping a runtime that was not shut down aborts every scoped task and logs an error.
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
    /// The plugin whose `apply` loaded this one, if any.
    outer: Option<String>,
    /// Where this plugin's scope is created: the root, or the outer plugin's scope.
    home: Scope,
}

impl Table {
    fn index(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    /// Removes `name` and every plugin loaded from inside it, transitively.
    fn remove_with_inner(&mut self, name: &str) {
        let mut gone = vec![name.to_owned()];
        while let Some(next) = gone.pop() {
            self.slots.retain(|s| {
                let inner = s.outer.as_deref() == Some(next.as_str());
                if inner {
                    gone.push(s.name.clone());
                }
                s.name != next && !inner
            });
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

    /// How many scopes of this runtime (the root, plugin scopes, children, detached scopes)
    /// have been created and not yet disposed. After [`Runtime::shutdown`] it is 0, so "no
    /// scope leaked" is an assertion a test can make.
    pub fn live_scopes(&self) -> usize {
        self.root.inner.shared.live.load(Ordering::Relaxed)
    }

    /// The paths of the scopes not yet disposed that the runtime can reach: the tree under the
    /// root and every detached scope with its subtree. For diagnostics and leak reports.
    pub fn live_scope_paths(&self) -> Vec<String> {
        let mut paths = Vec::new();
        let mut stack: Vec<Scope> = self.detached_scopes();
        stack.push(self.root.clone());
        while let Some(scope) = stack.pop() {
            let state = scope.inner.state.lock();
            if state.phase != ScopePhase::Disposed {
                paths.push(scope.path().to_owned());
            }
            stack.extend(state.children.values().cloned());
        }
        paths.sort();
        paths
    }

    fn detached_scopes(&self) -> Vec<Scope> {
        let detached = self.root.inner.shared.detached.lock();
        detached.values().map(|e| e.scope.clone()).collect()
    }

    /// Loads `plugin`: creates its scope and applies it. If `apply` fails or panics, the scope
    /// is disposed (nothing stays registered) and the error is returned. Called from inside
    /// another plugin's `apply`, the new plugin belongs to that one.
    pub async fn load(&self, plugin: impl Plugin) -> Result<(), KernelError> {
        let name = checked_name(&plugin)?;
        let me = self as *const Runtime as usize;
        let (outer, home) = APPLYING
            .try_with(|(runtime, outer, scope)| {
                (*runtime == me).then(|| (Some(outer.clone()), scope.clone()))
            })
            .ok()
            .flatten()
            .unwrap_or_else(|| (None, self.root.clone()));
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
                outer,
                home,
            });
        }
        self.apply_into_slot(&plugin, name).await
    }

    /// Unloads the plugin called `name`: disposes its scope, with the plugins it loaded. Fails
    /// with [`KernelError::UnloadRefused`], leaving everything loaded, when one of their
    /// unload checks says no.
    pub async fn unload(&self, name: &str) -> Result<(), KernelError> {
        let scope = self.take_for_update(name)?;
        self.check_unload(name, &scope)?;
        scope.dispose().await;
        self.table.lock().remove_with_inner(name);
        Ok(())
    }

    /// Replaces the loaded plugin of the same name: disposes the old instance's scope (and the
    /// plugins it loaded), then applies `plugin` in a fresh scope, keeping its place in the
    /// load order. If the new `apply` fails, the plugin ends up unloaded and the error says
    /// so. Refused like [`Runtime::unload`] when an unload check says no.
    pub async fn reload(&self, plugin: impl Plugin) -> Result<(), KernelError> {
        let name = checked_name(&plugin)?;
        let old = self.take_for_update(&name)?;
        self.check_unload(&name, &old)?;
        old.dispose().await;
        {
            let mut table = self.table.lock();
            let inner: Vec<String> = table
                .slots
                .iter()
                .filter(|s| s.outer.as_deref() == Some(name.as_str()))
                .map(|s| s.name.clone())
                .collect();
            for inner in inner {
                table.remove_with_inner(&inner);
            }
        }
        self.apply_into_slot(&plugin, name).await
    }

    /// Runs the unload checks of a plugin whose slot this caller marked busy; on refusal the
    /// slot gets its scope back.
    fn check_unload(&self, name: &str, scope: &Scope) -> Result<(), KernelError> {
        for check in scope.unload_checks() {
            if let Err(source) = crate::contain::call(|| check()) {
                let source: crate::BoxError = match source {
                    crate::contain::Failure::Error(err) => err,
                    panic => Box::new(panic),
                };
                let mut table = self.table.lock();
                if let Some(i) = table.index(name) {
                    table.slots[i].scope = Some(scope.clone());
                }
                return Err(KernelError::UnloadRefused {
                    name: name.to_owned(),
                    source,
                });
            }
        }
        Ok(())
    }

    /// Disposes every plugin in reverse load order; then every scope created outside the tree
    /// that is still live, all at once, each through its own teardown when one is bound; then
    /// the root scope. Further loads (and new detached scopes) are refused. Idempotent.
    pub async fn shutdown(&self) {
        let shared = self.root.inner.shared.clone();
        let scopes: Vec<Scope> = {
            let mut table = self.table.lock();
            table.shutting_down = true;
            // Under the detached table's lock, so no detached scope is created after this.
            let _detached = shared.detached.lock();
            shared.closing.store(true, Ordering::Release);
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
        loop {
            let left: Vec<_> = {
                let detached = shared.detached.lock();
                detached
                    .values()
                    .map(|e| (e.scope.clone(), e.teardown.clone()))
                    .collect()
            };
            if left.is_empty() {
                break;
            }
            join_all(left.into_iter().map(|(scope, teardown)| async move {
                match teardown {
                    Some(teardown) => teardown.run().await,
                    None => scope.dispose().await,
                }
                // A teardown always ends by disposing its scope; make sure of it regardless.
                scope.dispose().await;
            }))
            .await;
        }
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

    /// Applies `plugin` in a fresh scope under its slot's home and records it in its (busy)
    /// slot; on failure the slot is removed.
    async fn apply_into_slot(&self, plugin: &dyn Plugin, name: String) -> Result<(), KernelError> {
        let home = {
            let table = self.table.lock();
            table.index(&name).map(|i| table.slots[i].home.clone())
        };
        let scope = match home.map(|home| home.child(&format!("plugin:{name}"))) {
            Some(Ok(scope)) => scope,
            _ => {
                self.table.lock().remove_with_inner(&name);
                return Err(KernelError::ShuttingDown { name });
            }
        };
        let me = self as *const Runtime as usize;
        let applying = APPLYING.scope(
            (me, name.clone(), scope.clone()),
            AssertUnwindSafe(plugin.apply(&scope)).catch_unwind(),
        );
        let failure = match applying.await {
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
            self.table.lock().remove_with_inner(&name);
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
            self.table.lock().remove_with_inner(&name);
            Err(KernelError::ShuttingDown { name })
        }
    }
}

impl Drop for Runtime {
    /// The backstop for a runtime that was never shut down: disposers cannot be awaited here,
    /// so every scoped task is aborted, every effect and service is dropped unrun (which breaks
    /// reference cycles through services that hold a scope, so providers' own `Drop` runs),
    /// and the omission is logged.
    fn drop(&mut self) {
        let mut stack = self.detached_scopes();
        stack.push(self.root.clone());
        let mut abandoned = 0usize;
        while let Some(scope) = stack.pop() {
            // Fires the token of a scope still active, so graceful work sees it is over.
            scope.begin_disposal();
            let (effects, children, owned) = {
                let mut state = scope.inner.state.lock();
                if state.phase != ScopePhase::Disposed {
                    abandoned += 1;
                    crate::scope::count_disposed(&scope.inner.shared);
                }
                state.phase = ScopePhase::Disposed;
                (
                    std::mem::take(&mut state.effects),
                    std::mem::take(&mut state.children),
                    std::mem::take(&mut state.owned),
                )
            };
            effects.values().for_each(|e: &Effect| Scope::abort_task(e));
            drop((effects, owned));
            stack.extend(children.into_values());
        }
        let shared = &self.root.inner.shared;
        let detached = std::mem::take(&mut *shared.detached.lock());
        drop(detached);
        shared.services.clear();
        shared.bus.clear();
        if abandoned > 0 {
            tracing::error!(
                scopes = abandoned,
                "the runtime was dropped without shutdown(): scoped tasks were aborted and \
                 disposers did not run"
            );
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
