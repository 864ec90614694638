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
use std::cell::{Cell, RefCell};
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

/// A queued delivery of one event.
type Pending = Box<dyn FnOnce()>;

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
    /// The bus of the innermost delivery running on this thread (0: none). Checked first, so
    /// an emit outside any delivery costs one thread-local read.
    static ACTIVE: Cell<usize> = const { Cell::new(0) };
    /// The buses of the outer deliveries on this thread, for the rare emit across runtimes.
    static OUTER: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Events emitted during a delivery on their bus, with that bus, in emission order.
    static QUEUED: RefCell<VecDeque<(usize, Pending)>> = const { RefCell::new(VecDeque::new()) };
}

fn bus_key(shared: &Shared) -> usize {
    &shared.bus as *const EventBus as usize
}

/// True when this thread is delivering on the bus `key`, at any depth.
fn delivering_on(key: usize) -> bool {
    let active = ACTIVE.get();
    active == key || (active != 0 && OUTER.with_borrow(|outer| outer.contains(&key)))
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
        if !delivering_on(self as *const EventBus as usize) {
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
        let lists = shared.bus.lists.load();
        let Some(list) = lists
            .get(&TypeId::of::<E>())
            .and_then(|list| list.downcast_ref::<CowList<Listener<E>>>())
        else {
            return;
        };
        let key = bus_key(shared);
        if delivering_on(key) {
            let shared = shared.clone();
            let delivery: Pending = Box::new(move || deliver(&shared, &event));
            QUEUED.with_borrow_mut(|queue| queue.push_back((key, delivery)));
            return;
        }
        // Not delivering on this bus yet: this call delivers, then drains what listeners emit.
        let _active = Activate::new(key);
        let _gate = shared.bus.gate.read();
        deliver_to(list, &event);
        drop(lists);
        while let Some(next) = QUEUED.with_borrow_mut(|queue| {
            let at = queue.iter().position(|(bus, _)| *bus == key)?;
            queue.remove(at).map(|(_, delivery)| delivery)
        }) {
            next();
        }
    }
}

/// Marks this thread as delivering on a bus until dropped, also if a delivery unwinds.
struct Activate {
    previous: usize,
}

impl Activate {
    fn new(key: usize) -> Activate {
        let previous = ACTIVE.replace(key);
        if previous != 0 {
            OUTER.with_borrow_mut(|outer| outer.push(previous));
        }
        Activate { previous }
    }
}

impl Drop for Activate {
    fn drop(&mut self) {
        if self.previous != 0 {
            OUTER.with_borrow_mut(|outer| outer.pop());
        }
        ACTIVE.set(self.previous);
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
