//! `ReplayPlugin`: provides a [`ReplayModel`] as `dyn Model`.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_llm::Model;

use crate::model::ReplayModel;

/// The plugin named `model-replay`. It shares its model with the host, which may read the
/// call count and the unused entries after a run.
#[derive(Clone)]
pub struct ReplayPlugin {
    model: Arc<ReplayModel>,
}

impl ReplayPlugin {
    /// A plugin providing `model`.
    pub fn new(model: Arc<ReplayModel>) -> ReplayPlugin {
        ReplayPlugin { model }
    }
}

#[async_trait]
impl Plugin for ReplayPlugin {
    fn name(&self) -> &str {
        "model-replay"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.provide::<dyn Model>(self.model.clone() as Arc<dyn Model>)?;
        Ok(())
    }
}
