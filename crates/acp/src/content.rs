//! A prompt's content blocks as one user message: text verbatim, resource links as one line
//! each, and embedded text resources (an editor's @-mentioned files) as fenced blocks headed
//! by their URI, whose URIs the message also records. Images, audio and binary resources are
//! refused with an error that names them: no model dsh drives reads them yet.

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};
use serde_json::json;

use crate::rpc::{RpcError, code};

/// The message a prompt's blocks make.
#[derive(Debug, PartialEq)]
pub(crate) struct PromptContent {
    pub text: String,
    /// The URIs of the embedded resources, in order.
    pub resources: Vec<String>,
}

/// Reads `blocks`; an empty prompt or a block dsh cannot send is `-32602`.
pub(crate) fn prompt_content(blocks: &[ContentBlock]) -> Result<PromptContent, RpcError> {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut resources = Vec::new();
    let mut substance = false;
    for block in blocks {
        match block {
            ContentBlock::Text(text) => {
                substance |= !text.text.trim().is_empty();
                parts.push(text.text.clone());
            }
            ContentBlock::ResourceLink(link) => {
                substance = true;
                let mut line = format!("[resource link: {} {}]", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(" ({mime})"));
                }
                parts.push(line);
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => {
                    substance = true;
                    parts.push(dsh_agent::fenced(&resource.uri, &resource.text));
                    resources.push(resource.uri.clone());
                }
                EmbeddedResourceResource::BlobResourceContents(resource) => {
                    return Err(unsupported(
                        "binary resource",
                        format!(
                            "{} is binary; only text resources can be sent to the model",
                            resource.uri
                        ),
                    ));
                }
                _ => {
                    return Err(unsupported(
                        "resource",
                        "this resource kind is not supported".into(),
                    ));
                }
            },
            ContentBlock::Image(_) => {
                return Err(unsupported(
                    "image",
                    "image content is not supported: the configured model reads text only".into(),
                ));
            }
            ContentBlock::Audio(_) => {
                return Err(unsupported(
                    "audio",
                    "audio content is not supported".into(),
                ));
            }
            _ => {
                return Err(unsupported(
                    "unknown",
                    "unknown content is not supported".into(),
                ));
            }
        }
    }
    if !substance {
        return Err(RpcError::new(code::INVALID_PARAMS, "prompt is empty"));
    }
    Ok(PromptContent {
        text: parts.join("\n"),
        resources,
    })
}

fn unsupported(kind: &str, message: String) -> RpcError {
    RpcError::new(code::INVALID_PARAMS, message).with_data(json!({ "unsupported": kind }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn blocks(value: Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn each_block_kind_becomes_text_or_a_named_refusal() {
        let mention = blocks(json!([
            {"type": "text", "text": "explain"},
            {"type": "resource", "resource": {"uri": "file:///w/a.md", "mimeType": "text/markdown",
                "text": "# A\n```rust\nfn a() {}\n```\n"}}
        ]));
        assert_eq!(
            prompt_content(&mention).unwrap(),
            PromptContent {
                text: "explain\nfile:///w/a.md\n````\n# A\n```rust\nfn a() {}\n```\n````".into(),
                resources: vec!["file:///w/a.md".into()],
            }
        );
        let refused = |value: Value| prompt_content(&blocks(value)).unwrap_err();
        let blob = refused(json!([{"type": "resource", "resource":
            {"uri": "file:///w/x.png", "blob": "AAAA", "mimeType": "image/png"}}]));
        assert_eq!(blob.code, code::INVALID_PARAMS);
        assert!(
            blob.message.contains("file:///w/x.png is binary"),
            "{}",
            blob.message
        );
        let image = refused(json!([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]));
        assert_eq!(image.data, Some(json!({"unsupported": "image"})));
        let empty = refused(json!([{"type": "text", "text": "  "}]));
        assert_eq!(empty.message, "prompt is empty");
        let link = prompt_content(&blocks(
            json!([{"type": "resource_link", "name": "a", "uri": "file:///a"}]),
        ))
        .unwrap();
        assert_eq!(link.text, "[resource link: a file:///a]");
        assert!(link.resources.is_empty());
    }
}
