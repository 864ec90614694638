//! Typed services: one provider per service type, looked up by type, withdrawn when the
//! providing scope is disposed.
//!
//! A service is any `T: ?Sized + Send + Sync + 'static` held as `Arc<T>`, in practice a trait
//! object (`dyn ShellExecutor`) or a concrete spine type (`SessionStore`). The table is keyed by
//! `TypeId` with a pass-through-cheap hasher, because lookups sit on hot paths (agents look
//! their model up at every step).

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
        let mut entries = self.entries.write();
        if entries.get(&key).map(|e| e.registration) == Some(registration) {
            entries.remove(&key);
        }
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
        self.register("services", |registration| {
            let mut entries = shared.services.entries.write();
            if let Some(existing) = entries.get(&key) {
                return Err(KernelError::DuplicateService {
                    service: type_name::<T>(),
                    provider: existing.provider.to_string(),
                });
            }
            entries.insert(
                key,
                Entry {
                    value: Box::new(service),
                    registration,
                    provider,
                },
            );
            drop(entries);
            Ok(sync_effect(move || {
                shared.services.remove(key, registration);
            }))
        })?;
        Ok(())
    }

    /// The provider of `T`, if one is provided now. Look services up per use rather than
    /// caching them, so a reloaded provider is picked up.
    pub fn get<T>(&self) -> Option<Arc<T>>
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

    /// Like [`Scope::get`], but a missing service is a [`KernelError::MissingService`] naming
    /// the type.
    pub fn require<T>(&self) -> Result<Arc<T>, KernelError>
    where
        T: ?Sized + Send + Sync + 'static,
    {
        self.get::<T>().ok_or(KernelError::MissingService {
            service: type_name::<T>(),
        })
    }
}
