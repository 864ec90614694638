//! `GET {base_url}/models`: the model names a server offers, so a user can choose one without
//! reading its documentation.

use std::time::Duration;

use dsh_llm::{CancellationToken, ModelError, ModelErrorKind};

use crate::model::OpenAiModel;

/// The largest model list read.
const MAX_LIST_BYTES: usize = 4 * 1024 * 1024;

impl OpenAiModel {
    /// The ids the server lists, sorted; cancelled at once by `cancel`.
    pub async fn list_models(&self, cancel: CancellationToken) -> Result<Vec<String>, ModelError> {
        let request = self.models_request();
        let fetch = async {
            let response = request.send().await.map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Transport,
                    format!("cannot reach the server: {}", e.without_url()),
                )
            })?;
            let status = response.status().as_u16();
            let mut body = Vec::new();
            let mut response = response;
            while let Some(chunk) = response.chunk().await.map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Transport,
                    format!("reading the model list failed: {e}"),
                )
            })? {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_LIST_BYTES {
                    return Err(ModelError::new(
                        ModelErrorKind::Protocol,
                        "the model list is larger than 4 MiB",
                    ));
                }
            }
            if !(200..300).contains(&status) {
                let mut error = ModelError::new(
                    crate::model::kind_for_status(status, None),
                    format!(
                        "listing models failed with status {status}: {}",
                        crate::body::excerpt(&body)
                    ),
                );
                error.status = Some(status);
                return Err(error);
            }
            parse(&body)
        };
        let result = tokio::select! {
            result = tokio::time::timeout(self.idle_timeout().max(Duration::from_secs(1)), fetch) => result
                .unwrap_or_else(|_| Err(ModelError::new(ModelErrorKind::Transport, "the model list did not arrive in time"))),
            _ = cancel.cancelled() => Err(ModelError::cancelled()),
        };
        result.map_err(|e| self.scrub_error(e))
    }
}

/// `{"data": [{"id": …}, …]}` (OpenAI, DeepSeek, vLLM, Ollama's OpenAI API).
fn parse(body: &[u8]) -> Result<Vec<String>, ModelError> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        ModelError::new(
            ModelErrorKind::Protocol,
            format!("the model list is not JSON ({e})"),
        )
    })?;
    let Some(data) = value.get("data").and_then(|d| d.as_array()) else {
        return Err(ModelError::new(
            ModelErrorKind::Protocol,
            "the model list has no `data` array",
        ));
    };
    let mut ids: Vec<String> = data
        .iter()
        .filter_map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_owned))
        .collect();
    ids.sort();
    ids.dedup();
    Ok(ids)
}
