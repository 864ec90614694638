//! A client's `systemPrompt` (on `session/new` and `session/load`) as the agent's caller
//! prompt: one total function from the schema's type, with the schema's refusals.
//!
//! dsh advertises `sessionCapabilities.systemPrompt` with the `override` mode. `append` puts
//! the client's text after the project's instructions, as the system message's last part;
//! `override` puts it in place of dsh's built-in prompt, and the environment block and the
//! project's instructions are still sent (the schema allows either; dsh keeps them because
//! the model needs to know where it is). Only text blocks are accepted, as the schema
//! requires; an empty array, another block type or an unknown mode is `-32602` and nothing
//! is created or loaded.

use agent_client_protocol_schema::v1::{ContentBlock, SystemPrompt, SystemPromptMode};
use dsh_agent::{CallerPrompt, PromptMode};

use crate::rpc::RpcError;

const FIELD: &str = "systemPrompt";

/// The caller prompt `prompt` stands for (`None` when the client sent none).
pub(crate) fn caller_prompt(
    prompt: Option<SystemPrompt>,
) -> Result<Option<CallerPrompt>, RpcError> {
    let Some(prompt) = prompt else {
        return Ok(None);
    };
    let mode = match prompt.mode {
        SystemPromptMode::Append => PromptMode::Append,
        SystemPromptMode::Override => PromptMode::Replace,
        SystemPromptMode::Other(other) => {
            return Err(RpcError::bad_field(
                FIELD,
                format!("the system prompt mode {other:?} is not supported"),
            ));
        }
        // The schema's enum may grow; a mode dsh does not know is refused, never guessed.
        _ => {
            return Err(RpcError::bad_field(
                FIELD,
                "this system prompt mode is not supported",
            ));
        }
    };
    if prompt.content.is_empty() {
        return Err(RpcError::bad_field(
            FIELD,
            "the system prompt has no content",
        ));
    }
    let mut parts = Vec::with_capacity(prompt.content.len());
    for block in prompt.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text),
            _ => {
                return Err(RpcError::bad_field(
                    FIELD,
                    "a system prompt may hold only text blocks",
                ));
            }
        }
    }
    Ok(Some(CallerPrompt {
        mode,
        text: parts.join("\n\n"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_shape_of_a_system_prompt_is_taken_or_refused() {
        let table = [
            (json!(null), Ok(None)),
            (
                json!({"mode": "append", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                Ok(Some((PromptMode::Append, "a\n\nb"))),
            ),
            (
                json!({"mode": "override", "content": [{"type": "text", "text": "only"}]}),
                Ok(Some((PromptMode::Replace, "only"))),
            ),
            (json!({"mode": "append", "content": []}), Err("no content")),
            (
                json!({"mode": "_mine", "content": [{"type": "text", "text": "a"}]}),
                Err("not supported"),
            ),
            (
                json!({"mode": "append", "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
                Err("only text blocks"),
            ),
        ];
        for (wire, want) in table {
            let prompt: Option<SystemPrompt> = serde_json::from_value(wire.clone()).unwrap();
            let got = caller_prompt(prompt);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(
                    got.map(|p| (p.mode, p.text)),
                    want.map(|(m, t)| (m, t.to_owned())),
                    "{wire}"
                ),
                (Err(err), Err(want)) => {
                    assert!(err.message.contains(want), "{wire}: {}", err.message);
                    assert_eq!(err.data.as_ref().unwrap()["field"], FIELD);
                }
                (got, want) => panic!(
                    "{wire}: got {:?}, want {want:?}",
                    got.map(|p| p.map(|p| p.text))
                ),
            }
        }
    }
}
