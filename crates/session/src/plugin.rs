//! `SessionStorePlugin`: provides the session store and subscribes the persistence bridge, so
//! every announced session is bound to whichever `dyn SessionPersistence` is provided then.

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};

use crate::bridge::PersistenceBridge;
use crate::observer::Interest;
use crate::store::SessionStore;

/// The plugin named `session-store`. Load it after a persistence provider: the bridge looks
/// the provider up when each session is announced, so a session announced without one is
/// refused rather than kept in memory only.
#[derive(Clone, Copy, Debug, Default)]
pub struct SessionStorePlugin;

#[async_trait]
impl Plugin for SessionStorePlugin {
    fn name(&self) -> &str {
        "session-store"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let store = SessionStore::new();
        store.subscribe(
            scope,
            Interest::All,
            PersistenceBridge::resolving(scope.clone()),
        )?;
        scope.provide::<SessionStore>(store)?;
        Ok(())
    }
}
