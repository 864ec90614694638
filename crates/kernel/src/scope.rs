//! The scope tree: every effect (disposer, service, listener, task, child scope, owner link)
//! belongs to a scope, and disposing the scope undoes all of them in a fixed order.
//!
//! This module holds the node itself: creation (children and detached scopes), phases, the
//! cancellation token and the atomic registration of effects. Disposal is in `dispose.rs`,
//! owner links in `owner.rs`, tasks in `tasks.rs`.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering, fence};
use std::sync::{Arc, OnceLock, Weak};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::error::{BoxError, KernelError, Outcome};
use crate::events::EventBus;
use crate::owner::{Link, Owned};
use crate::services::ServiceRegistry;
use crate::tasks::TaskEffect;
use crate::teardown::Teardown;

/// An undo action run once when its scope is disposed.
pub(crate) type Undo = Box<dyn FnOnce() -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// A check consulted before the runtime unloads or reloads the plugin owning the scope.
pub(crate) type UnloadCheck = Arc<dyn Fn() -> Result<(), BoxError> + Send + Sync>;

/// One effect of a scope, undone when the scope is disposed.
pub(crate) enum Effect {
    /// A disposer, or the withdrawal of a service or listener.
    Undo(Undo),
    /// A scoped task: cancelled (after its grace, if it has one) and awaited.
    Task(TaskEffect),
    /// An unload check: nothing to undo, it simply stops being consulted.
    UnloadCheck(UnloadCheck),
}

/// Wraps a synchronous undo action as an [`Effect`].
pub(crate) fn sync_effect(f: impl FnOnce() + Send + 'static) -> Effect {
    Effect::Undo(Box::new(move || {
        f();
        Box::pin(std::future::ready(Ok(())))
    }))
}

/// Ids grow monotonically across the process, so sorting effects by id is their registration
/// order, and an id never names two things (scopes, effects, links and teardowns share it).
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// State shared by every scope of one runtime: the service table, the event bus and the
/// bookkeeping of live scopes.
pub(crate) struct Shared {
    pub(crate) services: ServiceRegistry,
    pub(crate) bus: EventBus,
    /// Scopes created and not yet disposed, the root included.
    pub(crate) live: AtomicUsize,
    /// Scopes created outside the tree, held until they are disposed (or the runtime ends),
    /// each with the teardown that owns it, if one was bound.
    pub(crate) detached: Mutex<BTreeMap<u64, DetachedEntry>>,
    /// Set when the runtime's shutdown begins: no new detached scope is accepted.
    pub(crate) closing: AtomicBool,
}

pub(crate) struct DetachedEntry {
    pub(crate) scope: Scope,
    pub(crate) teardown: Option<Teardown>,
}

/// Counts one scope as disposed. Saturating, because a runtime dropped while a disposal is
/// still finishing elsewhere counts that scope itself.
pub(crate) fn count_disposed(shared: &Shared) {
    let _ = shared
        .live
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
}

/// Where a scope is in its life. It only moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopePhase {
    /// Accepts new effects.
    Active,
    /// Disposal has begun: new effects are refused, existing ones are being undone.
    Disposing,
    /// Every child, owned teardown and effect has been disposed.
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

/// A [`Scope`] handle that does not keep it alive; see [`Scope::downgrade`].
#[derive(Clone, Debug)]
pub struct WeakScope {
    inner: Weak<ScopeInner>,
}

impl WeakScope {
    /// The scope, while any strong handle to it exists.
    pub fn upgrade(&self) -> Option<Scope> {
        self.inner.upgrade().map(|inner| Scope { inner })
    }
}

pub(crate) struct ScopeInner {
    pub(crate) id: u64,
    path: Arc<str>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) parent: Option<Weak<ScopeInner>>,
    pub(crate) detached: bool,
    /// Mirrors `state.phase == Active` for lock-free reads on lookup paths.
    active: AtomicBool,
    /// Created on first use: most scopes never hand out a token.
    token: OnceLock<CancellationToken>,
    pub(crate) state: Mutex<State>,
    pub(crate) disposed: Notify,
}

pub(crate) struct State {
    pub(crate) phase: ScopePhase,
    pub(crate) effects: BTreeMap<u64, Effect>,
    pub(crate) children: BTreeMap<u64, Scope>,
    /// Teardowns this scope owns through owner links.
    pub(crate) owned: BTreeMap<u64, Owned>,
    /// Links by which other scopes own this one; withdrawn when this disposal completes.
    pub(crate) owners: Vec<Link>,
}

impl Scope {
    /// A new tree root with its own services and event bus.
    pub(crate) fn new_root(name: &str) -> Scope {
        let shared = Arc::new(Shared {
            services: ServiceRegistry::default(),
            bus: EventBus::default(),
            live: AtomicUsize::new(0),
            detached: Mutex::new(BTreeMap::new()),
            closing: AtomicBool::new(false),
        });
        Scope::new_node(shared, name.into(), None, false)
    }

    fn new_node(
        shared: Arc<Shared>,
        path: Arc<str>,
        parent: Option<Weak<ScopeInner>>,
        detached: bool,
    ) -> Scope {
        shared.live.fetch_add(1, Ordering::Relaxed);
        Scope {
            inner: Arc::new(ScopeInner {
                id: next_id(),
                path,
                shared,
                parent,
                detached,
                active: AtomicBool::new(true),
                token: OnceLock::new(),
                state: Mutex::new(State {
                    phase: ScopePhase::Active,
                    effects: BTreeMap::new(),
                    children: BTreeMap::new(),
                    owned: BTreeMap::new(),
                    owners: Vec::new(),
                }),
                disposed: Notify::new(),
            }),
        }
    }

    /// The scope's path, e.g. `root/plugin:shell-local/task-7`; a detached scope's path names
    /// the scope that created it, then `~` and its own name. Used in logs and error messages.
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Where the scope is in its life.
    pub fn phase(&self) -> ScopePhase {
        self.inner.state.lock().phase
    }

    /// True until disposal begins.
    pub fn is_active(&self) -> bool {
        self.inner.active.load(Ordering::Acquire)
    }

    /// True for a scope created with [`Scope::detached`].
    pub fn is_detached(&self) -> bool {
        self.inner.detached
    }

    /// How many effects (disposers, services, listeners, live tasks, unload checks) are
    /// registered and not yet undone. Finished tasks withdraw themselves, so a steady scope
    /// keeps a steady count; tests and leak checks read this.
    pub fn effect_count(&self) -> usize {
        self.inner.state.lock().effects.len()
    }

    /// True when both handles name the same scope.
    pub fn same_as(&self, other: &Scope) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The scope's cancellation signal. It fires the moment disposal begins, before any child,
    /// owned teardown or effect is disposed; a child scope's token is a child of its parent's,
    /// so it fires with any ancestor's. A detached scope's token is its own. Tasks that should
    /// wind down on their own watch it (see [`Scope::spawn_graceful`]).
    pub fn token(&self) -> CancellationToken {
        let token = self
            .inner
            .token
            .get_or_init(|| match self.parent() {
                Some(parent) => parent.token().child_token(),
                None => CancellationToken::new(),
            })
            .clone();
        // Pairs with the fence in `begin_disposal`: either that side sees this token and
        // cancels it, or this side sees the phase change and cancels it here.
        fence(Ordering::SeqCst);
        if !self.inner.active.load(Ordering::Relaxed) {
            token.cancel();
        }
        token
    }

    pub(crate) fn parent(&self) -> Option<Scope> {
        let parent = self.inner.parent.as_ref()?.upgrade()?;
        Some(Scope { inner: parent })
    }

    /// Creates a child scope. Children are disposed before any effect of this scope, and a
    /// child disposed on its own removes itself from this scope.
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
            false,
        );
        state.children.insert(child.inner.id, child.clone());
        Ok(child)
    }

    /// Creates a scope outside the kernel tree: it shares this runtime's services and event
    /// bus, but no scope disposes it as a child. Whoever needs it gone owns it explicitly,
    /// with [`Scope::own`] (directly, or through a [`Teardown`] bound with
    /// [`Teardown::for_scope`]); [`crate::Runtime::shutdown`] disposes what is left, each
    /// through its own teardown. Dropping every handle does not drop its effects: the runtime
    /// holds it until it is disposed. Refused when this scope is closed or the runtime is
    /// shutting down.
    pub fn detached(&self, name: &str) -> Result<Scope, KernelError> {
        let shared = &self.inner.shared;
        // Held across the check so a shutdown cannot slip between it and the insertion.
        let mut detached = shared.detached.lock();
        if !self.is_active() || shared.closing.load(Ordering::Acquire) {
            return Err(self.closed("detached scopes"));
        }
        let path: Arc<str> = format!("{}/~{}", self.inner.path, name).into();
        let scope = Scope::new_node(shared.clone(), path, None, true);
        detached.insert(
            scope.inner.id,
            DetachedEntry {
                scope: scope.clone(),
                teardown: None,
            },
        );
        Ok(scope)
    }

    /// A handle that does not keep the scope alive: for a callback stored in another seam's
    /// registry, where a strong handle would form a reference cycle.
    pub fn downgrade(&self) -> WeakScope {
        WeakScope {
            inner: Arc::downgrade(&self.inner),
        }
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
            Ok(Some(Effect::Undo(Box::new(move || {
                let fut = disposer();
                Box::pin(async move { fut.await.into_result() }) as BoxFuture<'static, _>
            }))))
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

    /// Registers a check that [`crate::Runtime::unload`] and [`crate::Runtime::reload`]
    /// consult before disposing the plugin this scope belongs to: an `Err` refuses the unload
    /// with [`KernelError::UnloadRefused`] and the plugin stays loaded. A provider whose users
    /// hold its instance (open sessions, running processes) uses it to say "not now" instead
    /// of being pulled out from under them. Shutdown does not consult it.
    pub fn add_unload_check<F>(&self, check: F) -> Result<(), KernelError>
    where
        F: Fn() -> Result<(), BoxError> + Send + Sync + 'static,
    {
        let check: UnloadCheck = Arc::new(check);
        self.register("unload checks", |_| Ok(Some(Effect::UnloadCheck(check))))?;
        Ok(())
    }

    /// The unload checks of this scope and of its descendants, cloned out of their tables.
    pub(crate) fn unload_checks(&self) -> Vec<UnloadCheck> {
        let (mut checks, children): (Vec<UnloadCheck>, Vec<Scope>) = {
            let state = self.inner.state.lock();
            let checks = state
                .effects
                .values()
                .filter_map(|e| match e {
                    Effect::UnloadCheck(check) => Some(check.clone()),
                    _ => None,
                })
                .collect();
            (checks, state.children.values().cloned().collect())
        };
        for child in children {
            checks.extend(child.unload_checks());
        }
        checks
    }

    /// Registers an effect built by `make` (which receives the effect's id) atomically with
    /// the phase check: either the scope is active and the effect is recorded, or nothing
    /// happens. `make` runs under the scope's lock, must not call back into this scope, and
    /// may return `None` when there turned out to be nothing to undo.
    pub(crate) fn register(
        &self,
        what: &'static str,
        make: impl FnOnce(u64) -> Result<Option<Effect>, KernelError>,
    ) -> Result<u64, KernelError> {
        let mut state = self.inner.state.lock();
        if state.phase != ScopePhase::Active {
            return Err(self.closed(what));
        }
        let id = next_id();
        if let Some(effect) = make(id)? {
            state.effects.insert(id, effect);
        }
        Ok(id)
    }

    /// Removes an effect without running it; the effect is dropped after the lock is released.
    pub(crate) fn remove_effect(&self, id: u64) -> bool {
        let removed = self.inner.state.lock().effects.remove(&id);
        removed.is_some()
    }

    pub(crate) fn closed(&self, what: &'static str) -> KernelError {
        KernelError::ScopeClosed {
            scope: self.inner.path.to_string(),
            what,
        }
    }

    pub(crate) fn downgrade_inner(&self) -> Weak<ScopeInner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn from_inner(inner: Arc<ScopeInner>) -> Scope {
        Scope { inner }
    }

    /// Moves the phase to `Disposing` and fires the token; true for the one caller that did.
    pub(crate) fn begin_disposal(&self) -> bool {
        {
            let mut state = self.inner.state.lock();
            if state.phase != ScopePhase::Active {
                return false;
            }
            state.phase = ScopePhase::Disposing;
            self.inner.active.store(false, Ordering::Release);
        }
        fence(Ordering::SeqCst);
        if let Some(token) = self.inner.token.get() {
            token.cancel();
        }
        true
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
