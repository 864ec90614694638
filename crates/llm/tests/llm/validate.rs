//! Request validation.

use dsh_llm::{Message, ModelErrorKind, ModelParams, ModelRequest, ToolCall, ToolSpec};
use serde_json::json;

fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}
fn assistant(calls: &[&str]) -> Message {
    Message::Assistant {
        content: String::new(),
        reasoning: None,
        tool_calls: calls
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "bash".into(),
                arguments: "{}".into(),
            })
            .collect(),
    }
}
fn tool(id: &str) -> Message {
    Message::Tool {
        call_id: id.into(),
        content: "ok".into(),
    }
}
fn spec(name: &str, parameters: serde_json::Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: "d".into(),
        parameters,
    }
}
fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        messages,
        tools: vec![],
        params: ModelParams::default(),
        session_id: None,
    }
}

#[test]
fn valid_requests_pass() {
    let mut r = request(vec![
        Message::System {
            content: "be brief".into(),
        },
        user("hi"),
        assistant(&["a", "b"]),
        tool("b"),
        tool("a"),
        assistant(&[]),
        user("again"),
    ]);
    r.tools = vec![
        spec("bash", json!({"type": "object"})),
        spec("read_file-2", json!({})),
    ];
    r.params = ModelParams {
        max_tokens: Some(1),
        temperature: Some(2.0),
        reasoning: None,
        model: None,
    };
    assert_eq!(r.validate(), Ok(()));
}

#[test]
fn each_rule_is_a_bad_request() {
    let with_tools = |tools: Vec<ToolSpec>| {
        let mut r = request(vec![user("hi")]);
        r.tools = tools;
        r
    };
    let with_params = |params: ModelParams| {
        let mut r = request(vec![user("hi")]);
        r.params = params;
        r
    };
    let cases = vec![
        request(vec![]),
        request(vec![user("hi"), tool("ghost")]),
        request(vec![user("hi"), assistant(&["a"]), tool("a"), tool("a")]),
        request(vec![user("hi"), assistant(&["a"]), user("too soon")]),
        request(vec![user("hi"), assistant(&["a"]), assistant(&[])]),
        request(vec![user("hi"), assistant(&["a"])]),
        with_tools(vec![spec("bad name", json!({}))]),
        with_tools(vec![spec(&"x".repeat(65), json!({}))]),
        with_tools(vec![spec("", json!({}))]),
        with_tools(vec![spec("dup", json!({})), spec("dup", json!({}))]),
        with_tools(vec![spec("arr", json!([]))]),
        with_params(ModelParams {
            temperature: Some(2.5),
            ..ModelParams::default()
        }),
        with_params(ModelParams {
            temperature: Some(-0.1),
            ..ModelParams::default()
        }),
        with_params(ModelParams {
            max_tokens: Some(0),
            ..ModelParams::default()
        }),
    ];
    for (i, r) in cases.iter().enumerate() {
        let err = r.validate().expect_err(&format!("case {i} passed"));
        assert_eq!(err.kind, ModelErrorKind::BadRequest, "case {i}");
        assert!(
            err.message.starts_with("invalid model request: "),
            "case {i}: {err}"
        );
    }
}
