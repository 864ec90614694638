//! Owner links: a scope that owns something outside its own tree.
//!
//! A kernel child is owned by exactly one parent, which disposes it first. Some things need
//! several owners — an agent is owned by its plugin, by every clone of its handle and by the
//! scope of whoever created it — and must be torn down in their own order, not by a parent's
//! blanket disposal. [`Scope::own`] records such a link: when the owner is disposed, it runs
//! the owned side's one memoised teardown and waits for it (all of an owner's links at once).
//! When the owned side finishes first, the link withdraws itself, so an owner never keeps a
//! reference to something already gone.

use std::sync::Weak;

use futures::future::BoxFuture;

use crate::error::KernelError;
use crate::scope::{Scope, ScopeInner, ScopePhase, next_id};
use crate::teardown::Teardown;

/// Something a scope can own through [`Scope::own`]: a [`Scope`] (typically a detached one)
/// or a [`Teardown`]. Sealed: the kernel knows how to run and watch both.
pub trait Ownable: sealed::Sealed {
    #[doc(hidden)]
    fn as_owned(&self) -> Owned;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Scope {}
    impl Sealed for crate::Teardown {}
}

impl Ownable for Scope {
    fn as_owned(&self) -> Owned {
        Owned::Scope(self.clone())
    }
}

impl Ownable for Teardown {
    fn as_owned(&self) -> Owned {
        Owned::Teardown(self.clone())
    }
}

/// The owned side of a link.
#[doc(hidden)]
#[derive(Clone)]
pub enum Owned {
    /// Disposed with [`Scope::dispose`].
    Scope(Scope),
    /// Run with [`Teardown::run`].
    Teardown(Teardown),
}

impl Owned {
    /// Runs the owned side's teardown and waits for it.
    pub(crate) fn finish(self) -> BoxFuture<'static, ()> {
        match self {
            Owned::Scope(scope) => Box::pin(async move { scope.dispose().await }),
            Owned::Teardown(teardown) => Box::pin(async move { teardown.run().await }),
        }
    }

    /// Records `link` on the owned side; false when it has already finished (there is then
    /// nothing to own).
    fn watch(&self, link: Link) -> bool {
        match self {
            Owned::Scope(scope) => {
                let mut state = scope.inner.state.lock();
                if state.phase == ScopePhase::Disposed {
                    return false;
                }
                state.owners.push(link);
                true
            }
            Owned::Teardown(teardown) => teardown.watch(link),
        }
    }
}

/// One owner link, as the owned side remembers it.
pub(crate) struct Link {
    pub(crate) owner: Weak<ScopeInner>,
    pub(crate) id: u64,
}

/// Withdraws finished links from their owners. The owners' entries are dropped after each
/// owner's lock is released.
pub(crate) fn withdraw_links(links: Vec<Link>) {
    for link in links {
        if let Some(owner) = link.owner.upgrade() {
            let removed = owner.state.lock().owned.remove(&link.id);
            drop(removed);
        }
    }
}

impl Scope {
    /// Makes this scope an owner of `owned`: when this scope is disposed, it runs `owned`'s
    /// teardown (disposes the scope, or runs the [`Teardown`]) and waits for it, together with
    /// its children and its other owned teardowns, before its own effects. The link is
    /// withdrawn when `owned` finishes first. Fails atomically with
    /// [`KernelError::ScopeClosed`] once this scope's disposal has begun (nothing is linked);
    /// owning something that has already finished is a no-op.
    pub fn own(&self, owned: &impl Ownable) -> Result<(), KernelError> {
        let owned = owned.as_owned();
        if let Owned::Scope(scope) = &owned
            && scope.same_as(self)
        {
            return Err(KernelError::OwnsItself {
                scope: self.path().to_owned(),
            });
        }
        let id = next_id();
        {
            let mut state = self.inner.state.lock();
            if state.phase != ScopePhase::Active {
                return Err(self.closed("owner links"));
            }
            state.owned.insert(id, owned.clone());
        }
        // The two locks are never held together, so links in both directions cannot deadlock.
        let link = Link {
            owner: self.downgrade_inner(),
            id,
        };
        if !owned.watch(link) {
            let removed = self.inner.state.lock().owned.remove(&id);
            drop(removed);
        }
        Ok(())
    }

    /// How many owner links this scope holds that have not yet been withdrawn.
    pub fn owned_count(&self) -> usize {
        self.inner.state.lock().owned.len()
    }
}
