//! The kernel plugin that provides the JSONL provider, and why it may refuse to unload.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::{SessionId, SessionPersistence};

use crate::config::JsonlConfig;
use crate::provider::JsonlPersistence;

/// Why the JSONL plugin refused to unload: sessions bound to its instance are still open.
#[derive(Debug, thiserror::Error)]
#[error(
    "{count} session(s) still open in the JSONL provider ({ids}); detach them before unloading it"
)]
pub struct StillOpen {
    /// The open sessions' ids, comma-separated.
    pub ids: String,
    /// How many are open.
    pub count: usize,
}

/// Provides `dyn SessionPersistence` backed by JSONL files, and shuts it down (flushing every
/// open session) when its scope is disposed.
///
/// The instance is bound to every session it has open (the persistence bridge keeps it per
/// session), so the plugin refuses to be unloaded or reloaded while any is open: detach them
/// first. Shutdown is not refused; it flushes and closes what is still open.
pub struct JsonlPlugin {
    /// The provider's configuration.
    pub config: JsonlConfig,
}

#[async_trait]
impl Plugin for JsonlPlugin {
    fn name(&self) -> &str {
        "session-jsonl"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let persistence = JsonlPersistence::new(self.config.clone())?;
        scope.provide::<dyn SessionPersistence>(persistence.clone())?;
        let watched = Arc::downgrade(&persistence);
        scope.add_unload_check(move || {
            let open = watched
                .upgrade()
                .map(|p| p.open_sessions())
                .unwrap_or_default();
            if open.is_empty() {
                return Ok(());
            }
            let ids: Vec<&str> = open.iter().map(SessionId::as_str).collect();
            Err(Box::new(StillOpen {
                ids: ids.join(", "),
                count: open.len(),
            }))
        })?;
        scope.add_disposer(move || async move { persistence.shutdown().await })?;
        Ok(())
    }
}
