//! Typed publish/subscribe. Listeners are synchronous and contained: a listener that panics or
//! returns an error is logged and never breaks the emitter or the listeners after it.
//!
//! Each event type has an immutable listener list that subscription replaces (copy on write),
//! so `emit` takes a read lock only long enough to clone an `Arc` and then calls listeners with
//! no lock held: a listener may emit or subscribe without deadlocking. Listeners run in
//! subscription order on the emitter's thread, which keeps each emitter's order.

use std::any::{Any, TypeId, type_name};
use std::sync::Arc;

use parking_lot::RwLock;
use rustc_hash::FxHashMap;

use crate::contain;
use crate::error::{BoxError, KernelError, Outcome};
use crate::scope::{Scope, sync_effect};

type ListenerFn<E> = dyn Fn(&E) -> Result<(), BoxError> + Send + Sync;

struct Listener<E: 'static> {
    id: u64,
    scope: Arc<str>,
    call: Arc<ListenerFn<E>>,
}

impl<E: 'static> Clone for Listener<E> {
    fn clone(&self) -> Self {
        Listener {
            id: self.id,
            scope: self.scope.clone(),
            call: self.call.clone(),
        }
    }
}

type ListenerList<E> = Arc<[Listener<E>]>;

#[derive(Default)]
pub(crate) struct EventBus {
    /// For each event type `E`, a `ListenerList<E>`.
    lists: RwLock<FxHashMap<TypeId, Box<dyn Any + Send + Sync>>>,
}

impl EventBus {
    fn snapshot<E: 'static>(&self) -> Option<ListenerList<E>> {
        let lists = self.lists.read();
        lists
            .get(&TypeId::of::<E>())?
            .downcast_ref::<ListenerList<E>>()
            .cloned()
    }

    /// Replaces the list of `E` with `edit(old list)`.
    fn update<E: 'static>(&self, edit: impl FnOnce(&[Listener<E>]) -> Vec<Listener<E>>) {
        let mut lists = self.lists.write();
        let key = TypeId::of::<E>();
        let old = lists
            .get(&key)
            .and_then(|b| b.downcast_ref::<ListenerList<E>>())
            .map(|l| &l[..])
            .unwrap_or(&[]);
        let new = edit(old);
        if new.is_empty() {
            lists.remove(&key);
        } else {
            let list: ListenerList<E> = new.into();
            lists.insert(key, Box::new(list));
        }
    }
}

impl Scope {
    /// Subscribes `listener` to events of type `E` until this scope is disposed.
    pub fn on<E, R, F>(&self, listener: F) -> Result<(), KernelError>
    where
        E: 'static,
        R: Outcome,
        F: Fn(&E) -> R + Send + Sync + 'static,
    {
        let shared = self.inner.shared.clone();
        let scope: Arc<str> = self.path().into();
        let call: Arc<ListenerFn<E>> = Arc::new(move |event: &E| listener(event).into_result());
        self.register("listeners", |id| {
            shared.bus.update::<E>(|old| {
                let mut list = old.to_vec();
                list.push(Listener { id, scope, call });
                list
            });
            Ok(sync_effect(move || {
                shared
                    .bus
                    .update::<E>(|old| old.iter().filter(|l| l.id != id).cloned().collect());
            }))
        })?;
        Ok(())
    }

    /// Delivers `event` to every current listener of `E`, in subscription order. Failures are
    /// logged with the listener's scope and do not reach the emitter.
    pub fn emit<E: 'static>(&self, event: &E) {
        let Some(listeners) = self.inner.shared.bus.snapshot::<E>() else {
            return;
        };
        for listener in listeners.iter() {
            if let Err(failure) = contain::call(|| (listener.call)(event)) {
                tracing::error!(
                    scope = %listener.scope,
                    event = type_name::<E>(),
                    "event listener {failure}"
                );
            }
        }
    }
}
