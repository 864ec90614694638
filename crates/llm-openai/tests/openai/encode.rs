//! Request encoding: the exact request body.

use dsh_llm::{Message, ModelParams, ModelRequest, ReasoningEffort, ToolCall, ToolSpec};
use dsh_llm_openai::{MaxTokensField, encode_request};
use serde_json::json;

fn conversation() -> ModelRequest {
    ModelRequest {
        messages: vec![
            Message::System {
                content: "be brief".into(),
            },
            Message::User {
                content: "list files".into(),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: Some("look first".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "a".into(),
                        name: "bash".into(),
                        arguments: "{\"command\":\"ls\"}".into(),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "bash".into(),
                        arguments: String::new(),
                    },
                ],
            },
            Message::Tool {
                call_id: "a".into(),
                content: "x y".into(),
            },
            Message::Tool {
                call_id: "b".into(),
                content: "ok".into(),
            },
            Message::Assistant {
                content: "Two files.".into(),
                reasoning: None,
                tool_calls: vec![],
            },
        ],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "Run".into(),
            parameters: json!({"type": "object"}),
        }],
        params: ModelParams {
            max_tokens: Some(512),
            temperature: Some(0.5),
            reasoning: None,
            model: None,
        },
        session_id: Some("never-sent".into()),
    }
}

#[test]
fn the_body_matches_the_wire_format() {
    let body = encode_request(
        "deepseek-flash",
        &conversation(),
        true,
        MaxTokensField::MaxTokens,
    );
    assert_eq!(
        body,
        json!({
            "model": "deepseek-flash",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list files"},
                {"role": "assistant", "content": "", "reasoning_content": "look first", "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "x y"},
                {"role": "tool", "tool_call_id": "b", "content": "ok"},
                {"role": "assistant", "content": "Two files.", "reasoning_content": ""}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run", "parameters": {"type": "object"}}}],
            "max_tokens": 512,
            "temperature": 0.5
        })
    );
    assert!(
        !body.to_string().contains("never-sent"),
        "the session id is never sent"
    );
    let plain = encode_request(
        "m",
        &conversation(),
        false,
        MaxTokensField::MaxCompletionTokens,
    );
    assert!(!plain.to_string().contains("reasoning_content"));
    assert_eq!(plain["max_completion_tokens"], 512);
}

#[test]
fn every_assistant_message_of_a_stretch_with_tool_calls_carries_reasoning() {
    let mut request = conversation();
    if let Message::Assistant { reasoning, .. } = &mut request.messages[2] {
        *reasoning = None;
    }
    // A later stretch without tool calls sends no reasoning it does not have.
    request.messages.push(Message::User {
        content: "thanks".into(),
    });
    request.messages.push(Message::Assistant {
        content: "welcome".into(),
        reasoning: None,
        tool_calls: vec![],
    });
    let body = encode_request("m", &request, true, MaxTokensField::MaxTokens);
    assert_eq!(body["messages"][2]["reasoning_content"], "");
    assert_eq!(body["messages"][5]["reasoning_content"], "");
    assert!(body["messages"][7].get("reasoning_content").is_none());
}

#[test]
fn reasoning_effort() {
    let mut request = conversation();
    for (effort, key, value) in [
        (None, None, None),
        (
            Some(ReasoningEffort::Off),
            Some("thinking"),
            Some(json!({"type": "disabled"})),
        ),
        (
            Some(ReasoningEffort::Low),
            Some("reasoning_effort"),
            Some(json!("low")),
        ),
        (
            Some(ReasoningEffort::High),
            Some("reasoning_effort"),
            Some(json!("high")),
        ),
        (
            Some(ReasoningEffort::Max),
            Some("reasoning_effort"),
            Some(json!("max")),
        ),
    ] {
        request.params.reasoning = effort;
        let body = encode_request("m", &request, true, MaxTokensField::MaxTokens);
        match key {
            None => {
                assert!(body.get("thinking").is_none() && body.get("reasoning_effort").is_none())
            }
            Some(key) => assert_eq!(body.get(key), value.as_ref(), "{effort:?}"),
        }
    }
}

#[test]
fn a_temperature_goes_on_the_wire_as_its_decimal_form() {
    let mut request = conversation();
    for (t, wire) in [(0.7f32, "0.7"), (0.1, "0.1"), (1.3, "1.3"), (0.0, "0.0")] {
        request.params.temperature = Some(t);
        let body = encode_request("m", &request, true, MaxTokensField::MaxTokens);
        let text = body.to_string();
        assert!(
            text.contains(&format!("\"temperature\":{wire}")),
            "{t}: {text}"
        );
    }
}
