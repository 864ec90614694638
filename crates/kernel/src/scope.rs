//! The scope tree: every effect (disposer, service, listener, task, child scope) belongs to a
//! scope, and disposing the scope undoes all of them in a fixed order.
//!
//! Order: child scopes first (newest child first), then the scope's own effects last-in-first-
//! out. One ordered chain per scope, never concurrent siblings, because teardown order is
//! load-bearing (an agent's closing `turn/end` must be flushed before its session detaches).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::contain;
use crate::error::{BoxError, KernelError, Outcome};
use crate::events::EventBus;
use crate::services::ServiceRegistry;

/// One undo action, run once when its scope is disposed.
pub(crate) type Effect = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// Wraps a synchronous undo action as an [`Effect`].
pub(crate) fn sync_effect(f: impl FnOnce() + Send + 'static) -> Effect {
    Box::new(move || {
        f();
        Box::pin(std::future::ready(Ok(())))
    })
}

/// State shared by every scope of one runtime: the service table, the event bus and the id
/// counter that orders effects.
pub(crate) struct Shared {
    pub(crate) services: ServiceRegistry,
    pub(crate) bus: EventBus,
    next_id: AtomicU64,
}

impl Shared {
    /// Ids grow monotonically across the runtime, so sorting effects by id is their
    /// registration order.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

/// Where a scope is in its life. It only moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopePhase {
    /// Accepts new effects.
    Active,
    /// Disposal has begun: new effects are refused, existing ones are being undone.
    Disposing,
    /// Every child and every effect has been disposed.
    Disposed,
}

/// Identifies a disposer registered with [`Scope::add_disposer`], so it can be withdrawn
/// without running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DisposerKey {
    scope: u64,
    id: u64,
}

/// A node of the scope tree. Cheap to clone: clones are handles to the same node.
#[derive(Clone)]
pub struct Scope {
    pub(crate) inner: Arc<ScopeInner>,
}

pub(crate) struct ScopeInner {
    id: u64,
    path: Arc<str>,
    pub(crate) shared: Arc<Shared>,
    parent: Option<Weak<ScopeInner>>,
    state: Mutex<State>,
    disposed: Notify,
}

struct State {
    phase: ScopePhase,
    effects: BTreeMap<u64, Effect>,
    children: BTreeMap<u64, Scope>,
}

tokio::task_local! {
    /// Ids of the scopes whose disposal the current task is running. A `dispose()` of one of
    /// them from inside its own disposal (a disposer disposing its scope, or an ancestor)
    /// returns at once instead of waiting for itself.
    static DISPOSING: RefCell<Vec<u64>>;
}

impl Scope {
    /// A new tree root with its own services and event bus.
    pub(crate) fn new_root(name: &str) -> Scope {
        let shared = Arc::new(Shared {
            services: ServiceRegistry::default(),
            bus: EventBus::default(),
            next_id: AtomicU64::new(1),
        });
        Scope::new_node(shared, name.into(), None)
    }

    fn new_node(shared: Arc<Shared>, path: Arc<str>, parent: Option<Weak<ScopeInner>>) -> Scope {
        let id = shared.next_id();
        Scope {
            inner: Arc::new(ScopeInner {
                id,
                path,
                shared,
                parent,
                state: Mutex::new(State {
                    phase: ScopePhase::Active,
                    effects: BTreeMap::new(),
                    children: BTreeMap::new(),
                }),
                disposed: Notify::new(),
            }),
        }
    }

    /// The scope's path from the root, e.g. `root/plugin:shell-local/task-7`. Used in logs and
    /// error messages.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Where the scope is in its life.
    pub fn phase(&self) -> ScopePhase {
        self.inner.state.lock().phase
    }

    /// True until disposal begins.
    pub fn is_active(&self) -> bool {
        self.phase() == ScopePhase::Active
    }

    /// How many effects (disposers, services, listeners, live tasks) are registered and not yet
    /// undone. Finished tasks withdraw themselves, so a steady scope keeps a steady count; tests
    /// and leak checks read this.
    pub fn effect_count(&self) -> usize {
        self.inner.state.lock().effects.len()
    }

    /// True when both handles name the same scope.
    pub fn same_as(&self, other: &Scope) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Creates a child scope. The child is disposed before any effect of this scope, and it
    /// removes itself from this scope once disposed on its own.
    pub fn child(&self, name: &str) -> Result<Scope, KernelError> {
        let mut state = self.inner.state.lock();
        if state.phase != ScopePhase::Active {
            return Err(self.closed("child scopes"));
        }
        let path: Arc<str> = format!("{}/{}", self.inner.path, name).into();
        let child = Scope::new_node(
            self.inner.shared.clone(),
            path,
            Some(Arc::downgrade(&self.inner)),
        );
        state.children.insert(child.inner.id, child.clone());
        Ok(child)
    }

    /// Registers `disposer` to run when this scope is disposed, after every effect registered
    /// later. Fails once disposal has begun. A disposer that fails or panics is logged and the
    /// remaining disposers still run.
    pub fn add_disposer<F, Fut>(&self, disposer: F) -> Result<DisposerKey, KernelError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Outcome,
    {
        let id = self.register("disposers", |_| {
            Ok(Box::new(move || {
                let fut = disposer();
                Box::pin(async move { fut.await.into_result() }) as BoxFuture<'static, _>
            }))
        })?;
        Ok(DisposerKey {
            scope: self.inner.id,
            id,
        })
    }

    /// Withdraws a disposer without running it. Returns false when it already ran, was
    /// already withdrawn, belongs to another scope, or disposal has taken it.
    pub fn remove_disposer(&self, key: DisposerKey) -> bool {
        key.scope == self.inner.id && self.remove_effect(key.id)
    }

    /// Registers an effect built by `make` (which receives the effect's id) atomically with
    /// the phase check: either the scope is active and the effect is recorded, or nothing
    /// happens. `make` runs under the scope's lock and must not call back into this scope.
    pub(crate) fn register(
        &self,
        what: &'static str,
        make: impl FnOnce(u64) -> Result<Effect, KernelError>,
    ) -> Result<u64, KernelError> {
        let mut state = self.inner.state.lock();
        if state.phase != ScopePhase::Active {
            return Err(self.closed(what));
        }
        let id = self.inner.shared.next_id();
        let effect = make(id)?;
        state.effects.insert(id, effect);
        Ok(id)
    }

    pub(crate) fn remove_effect(&self, id: u64) -> bool {
        self.inner.state.lock().effects.remove(&id).is_some()
    }

    pub(crate) fn closed(&self, what: &'static str) -> KernelError {
        KernelError::ScopeClosed {
            scope: self.inner.path.to_string(),
            what,
        }
    }

    pub(crate) fn downgrade(&self) -> Weak<ScopeInner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn from_inner(inner: Arc<ScopeInner>) -> Scope {
        Scope { inner }
    }

    /// Disposes the scope: child scopes first (newest first), then its own effects
    /// last-in-first-out. Idempotent and memoised: every caller, concurrent or later, resolves
    /// when the one disposal has completed. Dropping this future does not stop the disposal:
    /// the rest of it continues on a tokio task. Called from inside this scope's own disposal
    /// (a disposer disposing its scope), it returns at once.
    pub async fn dispose(&self) {
        if self.in_own_disposal() {
            return;
        }
        if self.begin_disposal() {
            // Each top-level disposal carries its own copy of the reentrancy stack, so the
            // future stays correct if it is moved to another task by `FinishOnDrop`.
            let stack = DISPOSING
                .try_with(|s| s.borrow().clone())
                .unwrap_or_default();
            let run = DISPOSING.scope(RefCell::new(stack), self.clone().disposal());
            FinishOnDrop(Some(Box::pin(run))).await;
        } else {
            self.wait_disposed().await;
        }
    }

    fn in_own_disposal(&self) -> bool {
        DISPOSING
            .try_with(|s| s.borrow().contains(&self.inner.id))
            .unwrap_or(false)
    }

    /// Moves the phase to `Disposing`; true for the one caller that did so.
    fn begin_disposal(&self) -> bool {
        let mut state = self.inner.state.lock();
        if state.phase == ScopePhase::Active {
            state.phase = ScopePhase::Disposing;
            true
        } else {
            false
        }
    }

    async fn wait_disposed(&self) {
        loop {
            let notified = self.inner.disposed.notified();
            let mut notified = std::pin::pin!(notified);
            // Enable before checking, so a completion between the check and the await is seen.
            notified.as_mut().enable();
            if self.phase() == ScopePhase::Disposed {
                return;
            }
            notified.await;
        }
    }

    /// The disposal chain of a scope whose phase this task moved to `Disposing`.
    fn disposal(self) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let _ = DISPOSING.try_with(|s| s.borrow_mut().push(self.inner.id));
            let children = std::mem::take(&mut self.inner.state.lock().children);
            for child in children.into_values().rev() {
                if child.begin_disposal() {
                    child.disposal().await;
                } else if !child.in_own_disposal() {
                    child.wait_disposed().await;
                }
            }
            let effects = std::mem::take(&mut self.inner.state.lock().effects);
            for (_, effect) in effects.into_iter().rev() {
                if let Err(failure) = run_effect(effect).await {
                    tracing::error!(scope = %self.inner.path, "disposer {failure}");
                }
            }
            self.inner.state.lock().phase = ScopePhase::Disposed;
            if let Some(parent) = self.inner.parent.as_ref().and_then(Weak::upgrade) {
                parent.state.lock().children.remove(&self.inner.id);
            }
            self.inner.disposed.notify_waiters();
            tracing::trace!(scope = %self.inner.path, "scope disposed");
        })
    }
}

async fn run_effect(effect: Effect) -> Result<(), contain::Failure> {
    let mut fut = None;
    contain::call(|| {
        fut = Some(effect());
        Ok(())
    })?;
    match fut {
        Some(fut) => contain::poll(fut).await,
        None => Ok(()),
    }
}

impl std::fmt::Debug for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scope")
            .field("path", &self.inner.path)
            .field("phase", &self.phase())
            .finish()
    }
}

/// Runs a disposal future to completion even if the awaiting caller is dropped: on drop, an
/// unfinished disposal moves to a tokio task.
struct FinishOnDrop(Option<BoxFuture<'static, ()>>);

impl Future for FinishOnDrop {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(fut) = this.0.as_mut() {
            std::task::ready!(fut.as_mut().poll(cx));
            this.0 = None;
        }
        Poll::Ready(())
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if let Some(fut) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    handle.spawn(fut);
                }
                Err(_) => tracing::error!(
                    "a scope disposal was abandoned: its future was dropped outside a tokio runtime"
                ),
            }
        }
    }
}
