//! The kernel plugin that provides the PostgreSQL provider.

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::SessionPersistence;

use crate::config::PostgresConfig;
use crate::provider::PostgresPersistence;

/// Provides `dyn SessionPersistence` backed by PostgreSQL, and shuts it down (storing and
/// closing every open session, giving its leases up) when its scope is disposed.
pub struct PostgresPlugin {
    /// The provider's configuration.
    pub config: PostgresConfig,
}

#[async_trait]
impl Plugin for PostgresPlugin {
    fn name(&self) -> &str {
        "session-postgres"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let persistence = PostgresPersistence::connect(self.config.clone()).await?;
        scope.provide::<dyn SessionPersistence>(persistence.clone())?;
        scope.add_disposer(move || async move { persistence.shutdown().await })?;
        Ok(())
    }
}
