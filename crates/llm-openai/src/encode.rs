//! Request encoding: the chat-completions body for a `ModelRequest`.

use dsh_llm::{Message, ModelRequest, ReasoningEffort};
use serde_json::{Map, Value, json};

/// Which field carries the output limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens` (DeepSeek, most servers).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI reasoning models).
    MaxCompletionTokens,
}

/// For each message, whether it stands between two user messages with a tool call among
/// them: DeepSeek's thinking mode then needs every assistant message of that stretch to carry
/// its `reasoning_content` in all later requests (a 400 otherwise).
fn tool_spans(messages: &[Message]) -> Vec<bool> {
    let mut out = vec![false; messages.len()];
    let mut start = 0;
    for end in 0..=messages.len() {
        if end == messages.len() || matches!(messages[end], Message::User { .. }) {
            let called = messages[start..end].iter().any(
                |m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
            );
            out[start..end].iter_mut().for_each(|f| *f = called);
            start = end + 1;
        }
    }
    out
}

fn message(m: &Message, send_reasoning: bool, in_tool_span: bool) -> Value {
    match m {
        Message::System { content } => json!({ "role": "system", "content": content }),
        Message::User { content } => json!({ "role": "user", "content": content }),
        Message::Tool { call_id, content } => {
            json!({ "role": "tool", "tool_call_id": call_id, "content": content })
        }
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            let mut obj = Map::new();
            obj.insert("role".into(), "assistant".into());
            obj.insert("content".into(), content.clone().into());
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        let arguments = if c.arguments.is_empty() { "{}" } else { c.arguments.as_str() };
                        json!({ "id": c.id, "type": "function", "function": { "name": c.name, "arguments": arguments } })
                    })
                    .collect();
                obj.insert("tool_calls".into(), calls.into());
            }
            if send_reasoning {
                // DeepSeek's thinking mode rejects a stretch with tool calls whose assistant
                // messages lack the field and ignores it elsewhere, so sending it (empty when
                // none was recorded) keeps any recorded session continuable.
                match reasoning {
                    Some(r) => {
                        obj.insert("reasoning_content".into(), r.clone().into());
                    }
                    None if in_tool_span => {
                        obj.insert("reasoning_content".into(), "".into());
                    }
                    None => {}
                }
            }
            Value::Object(obj)
        }
    }
}

/// The JSON body of a streaming chat-completions request.
pub fn encode_request(
    model: &str,
    request: &ModelRequest,
    send_reasoning: bool,
    max_tokens_field: MaxTokensField,
) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    let spans = tool_spans(&request.messages);
    body.insert(
        "messages".into(),
        request
            .messages
            .iter()
            .zip(spans)
            .map(|(m, in_tool_span)| message(m, send_reasoning, in_tool_span))
            .collect::<Vec<_>>()
            .into(),
    );
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "function": { "name": t.name, "description": t.description, "parameters": t.parameters } }))
            .collect();
        body.insert("tools".into(), tools.into());
    }
    if let Some(max) = request.params.max_tokens {
        let key = match max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(key.into(), max.into());
    }
    if let Some(t) = request.params.temperature {
        // Through the f32's shortest decimal form, so 0.7 goes on the wire as 0.7 and not as
        // the f64 widening 0.699999988079071.
        let decimal = t.to_string().parse::<f64>().unwrap_or(f64::from(t));
        body.insert("temperature".into(), json!(decimal));
    }
    match request.params.reasoning {
        None => {}
        Some(ReasoningEffort::Off) => {
            body.insert("thinking".into(), json!({ "type": "disabled" }));
        }
        Some(effort) => {
            // DeepSeek accepts low, high and max, and maps medium to high; thinking is on by
            // default, so no effort sends nothing and leaves the server's default (high).
            let level = match effort {
                ReasoningEffort::Low => "low",
                ReasoningEffort::Medium => "medium",
                ReasoningEffort::High => "high",
                _ => "max",
            };
            body.insert("reasoning_effort".into(), level.into());
        }
    }
    Value::Object(body)
}
