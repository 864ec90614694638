//! A memoised teardown: an ordered sequence of async steps that runs at most once, on its own
//! tokio task, however many owners ask for it.
//!
//! An agent is the motivating user: its handle clones, its plugin and its creator's scope all
//! own it, and disposing any of them must run the one teardown in the agent's own order (stop
//! the loop, unregister, detach the session, then dispose the agent's scope). Running it on a
//! task of its own means no disposal that merely *asked* for it can abort it half-way.

use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::contain::panic_message;
use crate::dispose::{UNWINDING, unwinding, unwinding_with};
use crate::error::KernelError;
use crate::owner::{Link, withdraw_links};
use crate::scope::{Scope, ScopeInner, next_id};

type Steps = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>;

/// A teardown that runs once and that any number of owners can await. Cheap to clone.
#[derive(Clone)]
pub struct Teardown {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    /// The scope this teardown ends with, for [`Teardown::for_scope`].
    scope: Option<Weak<ScopeInner>>,
    /// Where the steps are spawned; captured at creation so a call from a plain thread works.
    runtime: Option<tokio::runtime::Handle>,
    state: Mutex<State>,
    done: Notify,
}

struct State {
    steps: Option<Steps>,
    phase: Phase,
    owners: Vec<Link>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Pending,
    Running,
    Done,
}

impl Teardown {
    /// A teardown that runs `steps` once, when first asked to.
    pub fn new<F, Fut>(steps: F) -> Teardown
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Teardown::build(None, Box::new(move || Box::pin(steps())))
    }

    /// A teardown for a detached scope: it runs `steps` with the scope, then disposes the
    /// scope (also when `steps` panicked). [`crate::Runtime::shutdown`] runs it rather than
    /// disposing the scope directly, so the scope's ordered steps are never skipped; a task of
    /// the scope that asks for this teardown starts it and does not wait for itself.
    pub fn for_scope<F, Fut>(scope: &Scope, steps: F) -> Result<Teardown, KernelError>
    where
        F: FnOnce(Scope) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if !scope.is_detached() {
            return Err(KernelError::NotDetached {
                scope: scope.path().to_owned(),
            });
        }
        let owned = scope.clone();
        let teardown = Teardown::build(
            Some(scope.downgrade_inner()),
            Box::new(move || {
                Box::pin(async move {
                    let ran = std::panic::AssertUnwindSafe(steps(owned.clone()))
                        .catch_unwind()
                        .await;
                    if let Err(payload) = ran {
                        let message = panic_message(payload.as_ref());
                        tracing::error!(scope = %owned.path(), "teardown panicked: {message}");
                    }
                    owned.dispose().await;
                })
            }),
        );
        let mut detached = scope.inner.shared.detached.lock();
        match detached.get_mut(&scope.inner.id) {
            Some(entry) if entry.teardown.is_none() && scope.is_active() => {
                entry.teardown = Some(teardown.clone());
                Ok(teardown)
            }
            Some(_) if scope.is_active() => Err(KernelError::TeardownBound {
                scope: scope.path().to_owned(),
            }),
            _ => Err(scope.closed("teardowns")),
        }
    }

    fn build(scope: Option<Weak<ScopeInner>>, steps: Steps) -> Teardown {
        Teardown {
            inner: Arc::new(Inner {
                id: next_id(),
                scope,
                runtime: tokio::runtime::Handle::try_current().ok(),
                state: Mutex::new(State {
                    steps: Some(steps),
                    phase: Phase::Pending,
                    owners: Vec::new(),
                }),
                done: Notify::new(),
            }),
        }
    }

    /// Starts the teardown if nobody has, and waits until it has completed. Memoised: every
    /// caller resolves with the one run, and dropping this future does not interrupt it.
    /// Returns at once when called from inside the teardown's own steps, or from a task of
    /// the scope it tears down (which the steps may be waiting for).
    pub async fn run(&self) {
        if unwinding(self.inner.id) {
            return;
        }
        self.start();
        let from_inside = self
            .inner
            .scope
            .as_ref()
            .and_then(Weak::upgrade)
            .is_some_and(|inner| Scope::from_inner(inner).contains_current_task());
        if from_inside {
            return;
        }
        loop {
            let notified = self.inner.done.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.is_done() {
                return;
            }
            notified.await;
        }
    }

    /// True once some caller has started the teardown.
    pub fn is_started(&self) -> bool {
        self.inner.state.lock().phase != Phase::Pending
    }

    /// True once the teardown has completed.
    pub fn is_done(&self) -> bool {
        self.inner.state.lock().phase == Phase::Done
    }

    /// True when both handles name the same teardown.
    pub fn same_as(&self, other: &Teardown) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Starts the teardown if nobody has, without waiting for it.
    pub fn start(&self) {
        let steps = {
            let mut state = self.inner.state.lock();
            if state.phase != Phase::Pending {
                return;
            }
            state.phase = Phase::Running;
            state.steps.take()
        };
        let inner = self.inner.clone();
        let stack = RefCell::new(unwinding_with(self.inner.id));
        let run = UNWINDING.scope(stack, async move {
            if let Some(steps) = steps
                && let Err(payload) = std::panic::AssertUnwindSafe(steps()).catch_unwind().await
            {
                tracing::error!("teardown panicked: {}", panic_message(payload.as_ref()));
            }
            let owners = {
                let mut state = inner.state.lock();
                state.phase = Phase::Done;
                std::mem::take(&mut state.owners)
            };
            withdraw_links(owners);
            inner.done.notify_waiters();
        });
        let runtime = self
            .inner
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok());
        match runtime {
            Some(runtime) => {
                runtime.spawn(run);
            }
            None => {
                tracing::error!("a teardown was started outside a tokio runtime; running it here");
                futures::executor::block_on(run);
            }
        }
    }

    /// Records an owner link; false when the teardown has already completed.
    pub(crate) fn watch(&self, link: Link) -> bool {
        let mut state = self.inner.state.lock();
        if state.phase == Phase::Done {
            return false;
        }
        state.owners.push(link);
        true
    }
}

impl std::fmt::Debug for Teardown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teardown")
            .field("started", &self.is_started())
            .field("done", &self.is_done())
            .finish()
    }
}
