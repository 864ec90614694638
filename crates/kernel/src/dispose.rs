//! Disposal: the one memoised teardown of a scope.
//!
//! Order: the token fires; then everything the scope owns — its child scopes and its owner
//! links — is disposed concurrently, each in its own order; then the scope's own effects run
//! last-in-first-out, one at a time. Siblings are independent by construction (none can
//! reach another's effects), so running them together costs the slowest rather than the sum;
//! a scope's own effects stay sequential because their order is load-bearing (an agent's
//! closing `turn/end` must be flushed before its session detaches).
//!
//! Reentrancy. A disposal never waits for itself: a `dispose()` issued from inside a running
//! disposal (by a disposer, on this task) or from a task the disposal is about to stop (a
//! task of the scope or of a descendant, on any thread) returns at once. A task that disposes
//! its own active scope is spared: the call disposes everything else and returns to it.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::future::{BoxFuture, join_all};

use crate::contain;
use crate::owner::withdraw_links;
use crate::scope::{Effect, Scope, ScopePhase};
use crate::tasks::CURRENT_TASK;

tokio::task_local! {
    /// Ids of the scopes and teardowns whose disposal the current task is running. A
    /// `dispose()` of one of them from inside its own disposal returns at once.
    pub(crate) static UNWINDING: RefCell<Vec<u64>>;
}

/// True when the current task is running the disposal or teardown with this id.
pub(crate) fn unwinding(id: u64) -> bool {
    UNWINDING
        .try_with(|s| s.borrow().contains(&id))
        .unwrap_or(false)
}

/// The current task's unwinding stack plus `id`, to carry into a disposal or teardown that
/// may continue on another task.
pub(crate) fn unwinding_with(id: u64) -> Vec<u64> {
    let mut stack = UNWINDING
        .try_with(|s| s.borrow().clone())
        .unwrap_or_default();
    stack.push(id);
    stack
}

impl Scope {
    /// Disposes the scope: its token fires, then its child scopes and owned teardowns are
    /// disposed concurrently, then its own effects run last-in-first-out. Idempotent and
    /// memoised: every caller, concurrent or later, resolves when the one disposal has
    /// completed, and dropping this future does not stop it (the rest continues on a tokio
    /// task).
    ///
    /// Never waits for itself: called from inside this scope's disposal (a disposer disposing
    /// its scope or an ancestor), or from a task of this scope or a descendant while the
    /// disposal runs elsewhere, it returns at once. Called from such a task while the scope is
    /// still active, it disposes everything except the calling task and returns to it.
    pub async fn dispose(&self) {
        if unwinding(self.inner.id) {
            return;
        }
        let from_inside = self.contains_current_task();
        if self.begin_disposal() {
            let run = UNWINDING.scope(
                RefCell::new(unwinding_with(self.inner.id)),
                self.clone().disposal(),
            );
            FinishOnDrop(Some(Box::pin(run))).await;
        } else if !from_inside {
            self.wait_disposed().await;
        }
    }

    /// True when the current task is a scoped task of this scope or of one of its
    /// descendants: a task this scope's disposal will stop.
    pub(crate) fn contains_current_task(&self) -> bool {
        CURRENT_TASK
            .try_with(|mark| {
                let mut at = mark.scope.upgrade();
                while let Some(inner) = at {
                    if Arc::ptr_eq(&inner, &self.inner) {
                        return true;
                    }
                    at = inner.parent.as_ref().and_then(Weak::upgrade);
                }
                false
            })
            .unwrap_or(false)
    }

    pub(crate) async fn wait_disposed(&self) {
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
            let (children, owned) = {
                let mut state = self.inner.state.lock();
                (
                    std::mem::take(&mut state.children),
                    std::mem::take(&mut state.owned),
                )
            };
            let mut owned_work: Vec<BoxFuture<'static, ()>> = children
                .into_values()
                .rev()
                .map(|child| Box::pin(async move { child.dispose().await }) as BoxFuture<_>)
                .collect();
            owned_work.extend(owned.into_values().rev().map(|o| o.finish()));
            if owned_work.len() == 1 {
                if let Some(one) = owned_work.pop() {
                    one.await;
                }
            } else if !owned_work.is_empty() {
                join_all(owned_work).await;
            }
            let effects = std::mem::take(&mut self.inner.state.lock().effects);
            for (id, effect) in effects.into_iter().rev() {
                self.undo(id, effect).await;
            }
            self.finish_disposal();
        })
    }

    async fn undo(&self, id: u64, effect: Effect) {
        match effect {
            Effect::Undo(undo) => {
                let mut fut = None;
                let outcome = match contain::call(|| {
                    fut = Some(undo());
                    Ok(())
                }) {
                    Ok(()) => match fut {
                        Some(fut) => contain::poll(fut).await,
                        None => Ok(()),
                    },
                    Err(failure) => Err(failure),
                };
                if let Err(failure) = outcome {
                    tracing::error!(scope = %self.path(), "disposer {failure}");
                }
            }
            Effect::Task(task) => task.stop(self, id).await,
            Effect::UnloadCheck(check) => drop(check),
        }
    }

    fn finish_disposal(&self) {
        let owners = {
            let mut state = self.inner.state.lock();
            state.phase = ScopePhase::Disposed;
            std::mem::take(&mut state.owners)
        };
        if let Some(parent) = self.parent() {
            let removed = parent.inner.state.lock().children.remove(&self.inner.id);
            drop(removed);
        }
        if self.inner.detached {
            let removed = self.inner.shared.detached.lock().remove(&self.inner.id);
            drop(removed);
        }
        crate::scope::count_disposed(&self.inner.shared);
        withdraw_links(owners);
        self.inner.disposed.notify_waiters();
        tracing::trace!(scope = %self.path(), "scope disposed");
    }
}

/// Runs a disposal future to completion even if the awaiting caller is dropped: on drop, an
/// unfinished disposal moves to a tokio task.
pub(crate) struct FinishOnDrop(pub(crate) Option<BoxFuture<'static, ()>>);

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
