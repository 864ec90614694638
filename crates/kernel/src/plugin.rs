//! The plugin contract: a named unit that registers its effects on the scope it is given.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::BoxError;
use crate::scope::Scope;

/// A capability loaded into a [`crate::Runtime`]. `apply` registers everything the plugin
/// does (services, listeners, tasks, disposers, child scopes) on `scope`; the runtime disposes
/// that scope to unload it.
///
/// A plugin holds configuration, not state that must outlive it: state that has to survive a
/// reload of a consumer lives in the provider that owns it (see the runtime RFC, `docs/rfc/implemented/architecture/2026-11-30-runtime-and-plugins.md`).
#[async_trait]
pub trait Plugin: Send + Sync + 'static {
    /// The plugin's unique name within a runtime: non-empty, without `/`.
    fn name(&self) -> &str;

    /// Registers the plugin's effects on `scope`. On error (or panic) the runtime disposes
    /// `scope`, so a failed `apply` leaves nothing registered.
    async fn apply(&self, scope: &Scope) -> Result<(), BoxError>;
}

#[async_trait]
impl<P: Plugin + ?Sized> Plugin for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        (**self).apply(scope).await
    }
}

#[async_trait]
impl<P: Plugin + ?Sized> Plugin for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        (**self).apply(scope).await
    }
}
