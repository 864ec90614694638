//! Over real HTTP: connections go back to the pool after a complete answer, answers that are
//! not event streams are decoded or reported once, and an unknown model is named as such.

use std::time::Duration;

use dsh_llm::{CancellationToken, Model, ModelErrorKind, ModelEvent};
use dsh_llm_openai::OpenAiModel;
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use futures::StreamExt;

use crate::http::{config, request};

fn model(server: &MockModelServer) -> OpenAiModel {
    OpenAiModel::new(config(server)).unwrap()
}

async fn text(model: &OpenAiModel) -> String {
    let stream = model
        .stream(request(), CancellationToken::new())
        .await
        .unwrap();
    let items: Vec<_> = stream.collect().await;
    items
        .into_iter()
        .filter_map(|i| match i.unwrap() {
            ModelEvent::TextDelta(t) => Some(t),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn ten_sequential_calls_share_one_connection_even_when_the_body_ends_after_done() {
    let responses = (0..10)
        .map(|i| {
            let answer = MockResponse::sse_fixture("text_basic");
            // Half of them end their body 20 ms after `[DONE]`, as some servers do.
            if i % 2 == 0 {
                answer.trailing_delay(Duration::from_millis(20))
            } else {
                answer
            }
        })
        .collect();
    let server = MockModelServer::start(responses).await;
    let model = model(&server);
    for _ in 0..10 {
        assert_eq!(text(&model).await, "Hello, world!");
    }
    server.verify();
    assert_eq!(server.connections(), 1, "{:?}", server.requests());
}

#[tokio::test]
async fn a_complete_json_answer_to_a_streaming_request_is_used() {
    let answer = serde_json::json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"},
                     "finish_reason": "stop"}]
    });
    let server = MockModelServer::start(vec![
        MockResponse::status(200)
            .header("content-type", "application/json")
            .body(answer.to_string()),
    ])
    .await;
    assert_eq!(text(&model(&server)).await, "whole");
    server.verify();
}

#[tokio::test]
async fn an_html_page_sent_as_an_event_stream_is_reported_once_not_retried() {
    let page = "<html><head><title>Gateway Timeout</title></head><body>nginx</body></html>";
    let server = MockModelServer::start(vec![MockResponse::sse_bytes(page)]).await;
    let error = model(&server)
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::Protocol);
    assert!(error.message.contains("Gateway Timeout"), "{error}");
    assert_eq!(server.requests().len(), 1);
    server.verify();
}

#[tokio::test]
async fn an_unknown_or_retired_model_is_named_with_the_server_and_where_to_find_another() {
    let server = MockModelServer::start(vec![MockResponse::status(400)
        .header("content-type", "application/json")
        .body(r#"{"error":{"message":"Model Not Exist","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#)])
    .await;
    let mut config = config(&server);
    config.model = "deepseek-chat".into();
    let error = OpenAiModel::new(config)
        .unwrap()
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(error.kind, ModelErrorKind::BadRequest);
    for part in [
        "\"deepseek-chat\"".to_owned(),
        format!("{}/v1", server.base_url()),
        format!("{}/v1/models", server.base_url()),
        "Model Not Exist".to_owned(),
    ] {
        assert!(error.message.contains(&part), "{part} in {error}");
    }
    server.verify();
}

#[test]
fn a_keyless_server_on_the_network_is_accepted_only_when_declared_so() {
    use dsh_llm_openai::{OpenAiConfig, OpenAiConfigError};
    let mut config = OpenAiConfig::deepseek(None);
    config.base_url = "http://10.1.2.3:8000/v1".into();
    assert_eq!(
        OpenAiModel::new(config.clone()).err(),
        Some(OpenAiConfigError::MissingApiKey)
    );
    config.keyless = true;
    assert!(OpenAiModel::new(config).is_ok());
}

#[tokio::test]
async fn the_model_list_is_read_from_get_models_with_the_key() {
    let server = MockModelServer::start(Vec::new()).await;
    server.serve_models(&["deepseek-v4-pro", "deepseek-flash"]);
    let model = model(&server);
    let ids = model.list_models(CancellationToken::new()).await.unwrap();
    assert_eq!(ids, ["deepseek-flash", "deepseek-v4-pro"]);
    let request = &server.model_listings()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );
    assert!(
        request
            .header("authorization")
            .is_some_and(|v| v.starts_with("Bearer "))
    );
    server.serve_models_with(
        MockResponse::status(401)
            .header("content-type", "application/json")
            .body(r#"{"error":{"message":"bad key"}}"#),
    );
    let denied = model
        .list_models(CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(denied.kind, ModelErrorKind::Auth);
    server.serve_models_with(MockResponse::status(200).body("not json"));
    let garbled = model
        .list_models(CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(garbled.kind, ModelErrorKind::Protocol);
    server.verify();
}
