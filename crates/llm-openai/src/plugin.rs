//! `OpenAiPlugin`: provides an [`OpenAiModel`] as `dyn Model`.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_llm::Model;

use crate::config::OpenAiConfig;
use crate::model::OpenAiModel;

/// The plugin named `model-openai`. The configuration is checked when the plugin is built, so
/// a host reports a bad base URL or a missing key before it starts loading anything.
#[derive(Clone, Debug)]
pub struct OpenAiPlugin {
    model: OpenAiModel,
}

impl OpenAiPlugin {
    /// A plugin serving `config`, or why `config` is refused.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiPlugin, crate::OpenAiConfigError> {
        Ok(OpenAiPlugin {
            model: OpenAiModel::new(config)?,
        })
    }

    /// A plugin providing `model`, built (and so checked) by the host.
    pub fn from_model(model: OpenAiModel) -> OpenAiPlugin {
        OpenAiPlugin { model }
    }

    /// The model the plugin provides.
    pub fn model(&self) -> &OpenAiModel {
        &self.model
    }
}

#[async_trait]
impl Plugin for OpenAiPlugin {
    fn name(&self) -> &str {
        "model-openai"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        self.model.notify_on(scope);
        scope.provide::<dyn Model>(Arc::new(self.model.clone()) as Arc<dyn Model>)?;
        Ok(())
    }
}
