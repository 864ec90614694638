//! Typed services: one provider per service type, looked up by type, withdrawn when the
//! providing scope is disposed.
//!
//! A service is any `T: ?Sized + Send + Sync + 'static` held as `Arc<T>`, in practice a trait
//! object (`dyn ShellExecutor`) or a concrete spine type (`SessionStore`). The table is keyed by
//! `TypeId` with a pass-through-cheap hasher, because lookups sit on hot paths (agents look
//! their model up at every step). A lookup through a scope whose disposal has begun fails, so
//! code running on a scope that is going away cannot pick up a provider it should no longer
//! use; a removed or refused service is dropped only after the table's lock is released,
//! because its `Drop` may look services up.

use std::any::{Any, TypeId, type_name};
use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use crate::error::KernelError;
use crate::scope::{Scope, sync_effect};

#[derive(Default)]
pub(crate) struct ServiceRegistry {
    entries: RwLock<FxHashMap<TypeId, Entry>>,
}

struct Entry {
    /// An `Arc<T>` for the entry's `TypeId::of::<T>()`.
    value: Box<dyn Any + Send + Sync>,
    /// The effect id that registered it, so a late removal never takes a successor's entry.
    registration: u64,
    provider: Arc<str>,
}

impl ServiceRegistry {
    fn remove(&self, key: TypeId, registration: u64) {
        let removed = {
            let mut entries = self.entries.write();
            if entries.get(&key).map(|e| e.registration) == Some(registration) {
                entries.remove(&key)
            } else {
                None
            }
        };
        drop(removed);
    }

    /// Empties the table, dropping every service after the lock is released. The runtime's
    /// last resort: it breaks reference cycles through services that hold a scope.
    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *self.entries.write());
        drop(all);
    }
}

impl Scope {
    /// Provides `service` as the one implementation of `T` for as long as this scope lives.
    /// A second provider of the same `T` is refused with [`KernelError::DuplicateService`],
    /// and nothing is registered.
    pub fn provide<T>(&self, service: Arc<T>) -> Result<(), KernelError>
    where
        T: ?Sized + Send + Sync + 'static,
    {
        let key = TypeId::of::<T>();
        let shared = self.inner.shared.clone();
        let provider: Arc<str> = self.path().into();
        // A refused service comes back out of the closure and is dropped after the locks.
        let mut refused = Some(service);
        let outcome = self.register("services", |registration| {
            let mut entries = shared.services.entries.write();
            if let Some(existing) = entries.get(&key) {
                return Err(KernelError::DuplicateService {
                    service: type_name::<T>(),
                    provider: existing.provider.to_string(),
                });
            }
            let Some(service) = refused.take() else {
                return Ok(None);
            };
            entries.insert(
                key,
                Entry {
                    value: Box::new(service),
                    registration,
                    provider,
                },
            );
            drop(entries);
            Ok(Some(sync_effect(move || {
                shared.services.remove(key, registration);
            })))
        });
        drop(refused);
        outcome.map(drop)
    }

    /// The provider of `T`, if one is provided now and this scope is still active. Look
    /// services up per use rather than caching them, so a reloaded provider is picked up.
    pub fn get<T>(&self) -> Option<Arc<T>>
    where
        T: ?Sized + Send + Sync + 'static,
    {
        if !self.is_active() {
            return None;
        }
        self.lookup::<T>()
    }

    fn lookup<T>(&self) -> Option<Arc<T>>
    where
        T: ?Sized + Send + Sync + 'static,
    {
        let entries = self.inner.shared.services.entries.read();
        entries
            .get(&TypeId::of::<T>())?
            .value
            .downcast_ref::<Arc<T>>()
            .cloned()
    }

    /// Like [`Scope::get`], but says why there is nothing: [`KernelError::ScopeClosed`] when
    /// this scope's disposal has begun, [`KernelError::MissingService`] naming the type when
    /// nobody provides it.
    pub fn require<T>(&self) -> Result<Arc<T>, KernelError>
    where
        T: ?Sized + Send + Sync + 'static,
    {
        if !self.is_active() {
            return Err(self.closed("service lookups"));
        }
        self.lookup::<T>().ok_or(KernelError::MissingService {
            service: type_name::<T>(),
        })
    }
}
