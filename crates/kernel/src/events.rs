//! Typed publish/subscribe. Listeners are synchronous and contained: a listener that panics or
//! returns an error is logged and never breaks the emitter or the listeners after it.
//!
//! Each event type has a copy-on-write listener list, so `emit` reads a snapshot without a
//! lock and calls listeners with nothing held: a listener may emit or subscribe without
//! deadlocking. Listeners run in subscription order on the emitter's thread.
//!
//! Two guarantees beyond that:
//! - **Order.** An event emitted by a listener while an event is being delivered (on the same
//!   bus and thread) is queued, and delivered to every listener after the current event has
//!   reached them all. Each bus therefore delivers in the order events were emitted.
//! - **Liveness.** Removing a listener waits until every delivery that may still hold it has
//!   finished, so once its scope's `dispose()` has returned the listener is never called
//!   again. Deliveries hold a shared gate for this; removal takes it exclusively for an
//!   instant. This is why listeners must not block.

use std::any::{Any, TypeId, type_name};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::contain;
use crate::cow::CowList;
use crate::error::{BoxError, KernelError, Outcome};
use crate::scope::{Scope, Shared, sync_effect};

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

type Lists = FxHashMap<TypeId, Arc<dyn Any + Send + Sync>>;

#[derive(Default)]
pub(crate) struct EventBus {
    /// For each event type `E`, an `Arc<CowList<Listener<E>>>`. A type's list is created on
    /// its first subscription and kept, so the map changes once per event type.
    lists: ArcSwap<Lists>,
    /// Serialises changes to `lists`.
    edit: Mutex<()>,
    /// Held shared by every delivery, exclusively (for an instant) by every listener removal.
    gate: RwLock<()>,
}

thread_local! {
    /// The buses this thread is delivering on, each with the events emitted meanwhile.
    static DELIVERING: RefCell<Vec<Delivery>> = const { RefCell::new(Vec::new()) };
}

struct Delivery {
    bus: usize,
    queue: VecDeque<Box<dyn FnOnce()>>,
}

fn bus_key(shared: &Shared) -> usize {
    &shared.bus as *const EventBus as usize
}

impl EventBus {
    fn list<E: 'static>(&self) -> Option<Arc<CowList<Listener<E>>>> {
        let lists = self.lists.load();
        let list = lists.get(&TypeId::of::<E>())?.clone();
        list.downcast::<CowList<Listener<E>>>().ok()
    }

    fn list_or_create<E: 'static>(&self) -> Arc<CowList<Listener<E>>> {
        if let Some(list) = self.list::<E>() {
            return list;
        }
        let _edit = self.edit.lock();
        if let Some(list) = self.list::<E>() {
            return list;
        }
        let list: Arc<CowList<Listener<E>>> = Arc::new(CowList::default());
        let mut next: Lists = (**self.lists.load()).clone();
        next.insert(TypeId::of::<E>(), list.clone());
        self.lists.store(Arc::new(next));
        list
    }

    /// Waits until no delivery on another thread can still be calling a removed listener. A
    /// removal on a thread that is itself delivering skips the wait: that delivery is further
    /// up this very stack, and it re-reads the list for every event it delivers.
    fn quiesce(&self) {
        let key = self as *const EventBus as usize;
        let delivering_here = DELIVERING.with_borrow(|stack| stack.iter().any(|d| d.bus == key));
        if !delivering_here {
            drop(self.gate.write());
        }
    }

    /// Drops every listener list; the runtime's last resort when it is dropped unshut.
    pub(crate) fn clear(&self) {
        let old = {
            let _edit = self.edit.lock();
            self.lists.swap(Arc::new(Lists::default()))
        };
        drop(old);
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
        let list = shared.bus.list_or_create::<E>();
        let scope: Arc<str> = self.path().into();
        let call: Arc<ListenerFn<E>> = Arc::new(move |event: &E| listener(event).into_result());
        self.register("listeners", |id| {
            list.push(Listener { id, scope, call });
            Ok(Some(sync_effect(move || {
                list.retain(|l| l.id != id);
                shared.bus.quiesce();
            })))
        })?;
        Ok(())
    }

    /// Delivers `event` to every current listener of `E`, in subscription order. Failures are
    /// logged with the listener's scope and do not reach the emitter. Emitted from inside a
    /// listener, the event is delivered once the current event has reached every listener.
    pub fn emit<E: 'static>(&self, event: E) {
        let shared = &self.inner.shared;
        let Some(list) = shared.bus.list::<E>() else {
            return;
        };
        if list.is_empty() {
            return;
        }
        let key = bus_key(shared);
        let mut event = Some(event);
        DELIVERING.with_borrow_mut(|stack| {
            if let Some(delivery) = stack.iter_mut().find(|d| d.bus == key)
                && let Some(event) = event.take()
            {
                let shared = shared.clone();
                delivery
                    .queue
                    .push_back(Box::new(move || deliver(&shared, &event)));
            }
        });
        let Some(event) = event else {
            return;
        };
        // Not delivering on this bus yet: this call delivers, then drains what listeners emit.
        DELIVERING.with_borrow_mut(|stack| {
            stack.push(Delivery {
                bus: key,
                queue: VecDeque::new(),
            })
        });
        let _pop = PopDelivery;
        let _gate = shared.bus.gate.read();
        deliver_to(&list, &event);
        while let Some(next) = DELIVERING.with_borrow_mut(|stack| {
            stack
                .iter_mut()
                .find(|d| d.bus == key)
                .and_then(|d| d.queue.pop_front())
        }) {
            next();
        }
    }
}

/// Pops this thread's innermost delivery record, also if a delivery unwinds.
struct PopDelivery;

impl Drop for PopDelivery {
    fn drop(&mut self) {
        let leftover = DELIVERING.with_borrow_mut(|stack| stack.pop());
        drop(leftover);
    }
}

fn deliver<E: 'static>(shared: &Shared, event: &E) {
    if let Some(list) = shared.bus.list::<E>() {
        deliver_to(&list, event);
    }
}

fn deliver_to<E: 'static>(list: &CowList<Listener<E>>, event: &E) {
    for listener in list.snapshot().iter() {
        if let Err(failure) = contain::call(|| (listener.call)(event)) {
            tracing::error!(
                scope = %listener.scope,
                event = type_name::<E>(),
                "event listener {failure}"
            );
        }
    }
}
