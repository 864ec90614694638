//! The provider over real HTTP against the mock model server on 127.0.0.1 (headers,
//! statuses and retries, cancellation, timeouts, keep-alive).

use std::time::{Duration, Instant};

use dsh_llm::{
    CancellationToken, FinishReason, Message, Model, ModelErrorKind, ModelEvent, ModelParams,
    ModelRequest, StreamChecker,
};
use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiConfigError, OpenAiModel, RetryPolicy};
use dsh_test_providers::mock_model::{Ending, MockModelServer, MockResponse, Split};
use futures::StreamExt;

const KEY: &str = "sk-test-secret-123";

pub(crate) fn config(server: &MockModelServer) -> OpenAiConfig {
    let mut config = OpenAiConfig::deepseek(Some(ApiKey::new(KEY)));
    config.base_url = format!("{}/v1", server.base_url());
    config.retry = RetryPolicy {
        max_retries: 2,
        initial: Duration::from_millis(1),
        cap: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(60),
    };
    config.idle_timeout = Duration::from_secs(5);
    config
}

pub(crate) fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
        params: ModelParams::default(),
        session_id: None,
    }
}

async fn run(
    model: &OpenAiModel,
    cancel: CancellationToken,
) -> Result<Vec<Result<ModelEvent, dsh_llm::ModelError>>, dsh_llm::ModelError> {
    let stream = model.stream(request(), cancel).await?;
    let items: Vec<_> = stream.collect().await;
    let mut checker = StreamChecker::new();
    for item in &items {
        checker.observe(item).unwrap();
    }
    checker.end().unwrap();
    Ok(items)
}

#[tokio::test]
async fn a_streamed_answer_over_http_with_the_right_request() {
    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic").segments(Split::Every(7)),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(
        items.last().unwrap(),
        &Ok(ModelEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(r.header("user-agent").unwrap().starts_with("dsh/"));
    assert_eq!(r.json()["model"], "deepseek-flash");
    assert_eq!(r.json()["stream"], true);
    assert_eq!(model.info().provider, "openai-compatible");
    assert_eq!(
        model.info().endpoint.as_deref(),
        Some(server.base_url().as_str())
    );
    server.verify();
}

#[tokio::test]
async fn statuses_map_to_kinds_and_only_retryable_ones_are_retried() {
    let openai = r#"{"error":{"message":"described","type":"invalid_request_error","code":null}}"#;
    let quota = r#"{"error":{"message":"no quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    let table: [(u16, &str, ModelErrorKind, bool); 14] = [
        (400, openai, ModelErrorKind::BadRequest, false),
        (401, openai, ModelErrorKind::Auth, false),
        (
            402,
            "Insufficient Balance",
            ModelErrorKind::InsufficientBalance,
            false,
        ),
        (403, openai, ModelErrorKind::Auth, false),
        (404, "not found", ModelErrorKind::BadRequest, false),
        (408, "timeout", ModelErrorKind::Server, true),
        (413, openai, ModelErrorKind::BadRequest, false),
        (422, openai, ModelErrorKind::BadRequest, false),
        (429, openai, ModelErrorKind::RateLimited, true),
        (429, quota, ModelErrorKind::InsufficientBalance, false),
        (500, "boom", ModelErrorKind::Server, true),
        (502, "bad gateway", ModelErrorKind::Server, true),
        (503, openai, ModelErrorKind::Server, true),
        (504, "gateway timeout", ModelErrorKind::Server, true),
    ];
    for (status, body, kind, retried) in table {
        let attempts = if retried { 3 } else { 1 };
        let responses = (0..attempts)
            .map(|_| {
                MockResponse::status(status)
                    .header("x-request-id", "req-7")
                    .body(body)
            })
            .collect();
        let server = MockModelServer::start(responses).await;
        let model = OpenAiModel::new(config(&server)).unwrap();
        let err = model
            .stream(request(), CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(
            (err.kind, err.status),
            (kind, Some(status)),
            "{status} {body}"
        );
        assert_eq!(err.request_id.as_deref(), Some("req-7"));
        assert!(
            err.message
                .starts_with(&format!("{} answered HTTP {status} ", server.authority())),
            "{err}"
        );
        if body.contains("described") {
            assert!(err.message.contains(": described"), "{err}");
        }
        if attempts > 1 {
            assert!(
                err.message
                    .ends_with(&format!("(gave up after {attempts} attempts)")),
                "{err}"
            );
        }
        assert_eq!(server.requests().len(), attempts, "{status}: attempts");
        server.verify();
    }
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let server = MockModelServer::start(vec![
        MockResponse::status(429)
            .header("retry-after-ms", "200")
            .body("slow down"),
        MockResponse::sse_fixture("text_basic"),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    run(&model, CancellationToken::new()).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].at - requests[0].at >= Duration::from_millis(200),
        "the retry waited as asked"
    );
    server.verify();
}

#[tokio::test]
async fn hangs_before_headers_are_retried_but_not_after_the_first_event() {
    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
        MockResponse::sse_fixture("text_basic"),
    ])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(200);
    c.first_byte_timeout = Duration::from_millis(200);
    let model = OpenAiModel::new(c.clone()).unwrap();
    run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(server.requests().len(), 3);

    let first_chunk = dsh_test_support::sse::fixture("text_basic");
    let first_line_end = first_chunk.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let second = first_chunk[first_line_end..]
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap()
        + 2
        + first_line_end;
    let server = MockModelServer::start(vec![
        MockResponse::sse_bytes(first_chunk[..second].to_vec()).ending(Ending::Hang),
    ])
    .await;
    c.base_url = format!("{}/v1", server.base_url());
    let model = OpenAiModel::new(c).unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(items[0], Ok(ModelEvent::TextDelta("Hello".into())));
    let err = items[1].as_ref().unwrap_err();
    assert_eq!(err.kind, ModelErrorKind::Transport);
    assert!(err.message.contains("no data from 127.0.0.1"), "{err}");
    assert_eq!(
        server.requests().len(),
        1,
        "never retried after output started"
    );
}

#[tokio::test]
async fn a_cancel_mid_stream_closes_the_connection() {
    let bytes = dsh_test_support::sse::fixture("text_basic");
    let server = MockModelServer::start(vec![
        MockResponse::sse_bytes(bytes)
            .segments(Split::PerLine)
            .ending(Ending::Hang),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let cancel = CancellationToken::new();
    let mut stream = model.stream(request(), cancel.clone()).await.unwrap();
    assert_eq!(
        stream.next().await.unwrap(),
        Ok(ModelEvent::TextDelta("Hello".into()))
    );
    let cancelled_at = Instant::now();
    cancel.cancel();
    // The remaining buffered events may still arrive; the stream then ends Cancelled, at once.
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    assert_eq!(last.unwrap().unwrap_err().kind, ModelErrorKind::Cancelled);
    drop(stream);
    let closed = server
        .wait_closed(0, Duration::from_secs(5))
        .await
        .expect("the connection was closed");
    assert!(closed >= cancelled_at);
}

#[tokio::test]
async fn redirects_and_wrong_content_types_are_protocol_errors() {
    let server = MockModelServer::start(vec![
        MockResponse::status(302).header("location", "https://elsewhere.example/v1"),
        MockResponse::status(200)
            .header("content-type", "text/html")
            .body("<html>"),
        MockResponse::status(200)
            .header("content-type", "application/json")
            .body(r#"{"error":{"message":"quota","code":"insufficient_quota"}}"#),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let redirect = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(redirect.kind, ModelErrorKind::Protocol);
    assert!(
        redirect
            .message
            .contains("unexpected redirect to https://elsewhere.example/v1; check base_url")
    );
    let html = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(html.kind, ModelErrorKind::Protocol);
    let json = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(json.kind, ModelErrorKind::InsufficientBalance);
    server.verify();
}

#[test]
fn configuration_is_checked() {
    let base = |url: &str, key: Option<&str>| {
        let mut c = OpenAiConfig::deepseek(key.map(ApiKey::new));
        c.base_url = url.into();
        OpenAiModel::new(c).err()
    };
    assert_eq!(
        base("ftp://x", Some("k")),
        Some(OpenAiConfigError::InvalidBaseUrl("ftp://x".into()))
    );
    assert!(matches!(
        base("https://api.example.com/v1?x=1", Some("k")),
        Some(OpenAiConfigError::InvalidBaseUrl(_))
    ));
    assert!(matches!(
        base("https://u:p@api.example.com", Some("k")),
        Some(OpenAiConfigError::InvalidBaseUrl(_))
    ));
    assert_eq!(
        base("https://api.example.com", None),
        Some(OpenAiConfigError::MissingApiKey)
    );
    assert_eq!(
        base("http://127.0.0.1:8000/v1", None),
        None,
        "no key is fine on loopback"
    );
    assert_eq!(base("http://localhost:11434/v1", None), None);
    assert_eq!(
        base("http://api.example.com", Some("k")),
        Some(OpenAiConfigError::InsecureKeyTransport(
            "api.example.com".into()
        ))
    );
    assert_eq!(
        base("https://api.example.com", Some("has space")),
        Some(OpenAiConfigError::InvalidApiKey)
    );
    let mut c = OpenAiConfig::deepseek(Some(ApiKey::new("k")));
    c.extra_headers = vec![("Authorization".into(), "x".into())];
    assert_eq!(
        OpenAiModel::new(c.clone()).err(),
        Some(OpenAiConfigError::ReservedHeader("Authorization".into()))
    );
    c.extra_headers = vec![("bad header".into(), "x".into())];
    assert!(matches!(
        OpenAiModel::new(c.clone()).err(),
        Some(OpenAiConfigError::InvalidHeader(_))
    ));
    c.extra_headers.clear();
    c.idle_timeout = Duration::ZERO;
    assert_eq!(
        OpenAiModel::new(c).err(),
        Some(OpenAiConfigError::ZeroTimeout)
    );
}

#[tokio::test]
async fn the_key_never_leaks() {
    let (logs, _guard) = dsh_test_support::logs::capture();
    let server = MockModelServer::start(vec![
        MockResponse::status(503).body("busy"),
        MockResponse::status(503).body("busy"),
        MockResponse::status(401).body(r#"{"error":{"message":"bad key"}}"#),
    ])
    .await;
    let c = config(&server);
    assert!(!format!("{c:?}").contains(KEY));
    let model = OpenAiModel::new(c).unwrap();
    assert!(!format!("{model:?}").contains(KEY));
    let err = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::Auth);
    assert!(!format!("{err:?} {err}").contains(KEY));
    let text = logs.text();
    assert!(text.contains("retrying"), "retries are logged: {text}");
    assert!(!text.contains(KEY), "{text}");
}

/// Keep-alive comments reset the idle timeout; a body cut short is `transport`.
#[tokio::test]
async fn keep_alive_comments_reset_the_idle_timeout_and_a_cut_body_is_transport() {
    let mut body = ": keep-alive\n\n".repeat(20).into_bytes();
    body.extend(dsh_test_support::sse::fixture("text_basic"));
    let server = MockModelServer::start(vec![
        MockResponse::sse_bytes(body)
            .segments(Split::PerLine)
            .delay_between(Duration::from_millis(25)),
        MockResponse::sse_fixture("truncated_no_finish").ending(Ending::Close),
    ])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(500);
    c.retry.max_retries = 0;
    let model = OpenAiModel::new(c).unwrap();
    // 40 keep-alive lines 25 ms apart: a second in all, twice the idle timeout, yet never
    // more than 25 ms without a byte, a twentyfold margin for a loaded machine.
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(
        items.last().unwrap(),
        &Ok(ModelEvent::Finish {
            reason: FinishReason::Stop
        })
    );
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(
        items.last().unwrap().as_ref().unwrap_err().kind,
        ModelErrorKind::Transport
    );
    assert_eq!(server.requests().len(), 2);
    server.verify();
}

/// A cancel while waiting for headers ends the call at once.
#[tokio::test]
async fn a_cancel_before_headers_ends_the_call() {
    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let model = model.clone();
        let cancel = cancel.clone();
        async move { model.stream(request(), cancel).await.err() }
    });
    server.wait_arrival(0).await;
    cancel.cancel();
    let err = call.await.unwrap().unwrap();
    assert_eq!(err.kind, ModelErrorKind::Cancelled);
    assert!(
        server
            .wait_closed(0, Duration::from_secs(5))
            .await
            .is_some(),
        "the connection was closed"
    );
}

#[tokio::test]
async fn a_key_echoed_by_the_server_is_scrubbed_from_every_error_and_log() {
    let (logs, _guard) = dsh_test_support::logs::capture();
    let echoed_status = format!("upstream said: Authorization: Bearer {KEY}");
    let echoed_json = format!(r#"{{"error":{{"message":"the key {KEY} is invalid"}}}}"#);
    let in_stream =
        format!("data: {{\"error\":{{\"message\":\"quota for {KEY} exhausted\"}}}}\n\n");
    let server = MockModelServer::start(vec![
        MockResponse::status(503).body(echoed_status),
        MockResponse::status(401).body(echoed_json),
        MockResponse::sse_bytes(in_stream),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let err = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::Auth);
    assert!(err.message.contains("[redacted]"), "{err}");
    assert!(!format!("{err:?} {err}").contains(KEY));
    let text = logs.text();
    assert!(
        text.contains("Bearer [redacted]"),
        "the retried error is logged scrubbed: {text}"
    );
    assert!(!text.contains(KEY), "{text}");
    // An error event inside the stream is scrubbed too.
    let outcome = model.stream(request(), CancellationToken::new()).await;
    let rendered = match outcome {
        Err(e) => format!("{e:?}"),
        Ok(stream) => format!("{:?}", stream.collect::<Vec<_>>().await),
    };
    assert!(!rendered.contains(KEY), "{rendered}");
}

#[tokio::test]
async fn content_types_compare_case_insensitively_and_an_html_error_page_is_excerpted() {
    let html = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "x".repeat(4000)
    );
    let server = MockModelServer::start(vec![
        MockResponse::status(200)
            .header("content-type", "Text/Event-Stream; charset=UTF-8")
            .body(dsh_test_support::sse::fixture("text_basic")),
        MockResponse::status(400)
            .header("content-type", "text/html")
            .body(html),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(ModelEvent::Finish { .. })))
    );
    let err = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(
        err.message
            .ends_with("answered HTTP 400 Bad Request: an HTML error page: 502 Bad Gateway"),
        "{err}"
    );
}

#[tokio::test]
async fn a_cancel_while_an_error_body_stalls_ends_the_call_at_once() {
    use dsh_test_providers::mock_model::Split;
    let server = MockModelServer::start(vec![
        MockResponse::status(503)
            .body("busy, try again later")
            .segments(Split::Every(4))
            .delay_between(Duration::from_secs(60)),
    ])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_secs(600);
    let model = OpenAiModel::new(c).unwrap();
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let model = model.clone();
        let cancel = cancel.clone();
        async move { model.stream(request(), cancel).await.err() }
    });
    server.wait_arrival(0).await;
    cancel.cancel();
    // Without the cancel the call would wait for the 600 s idle timeout.
    let err = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the cancel ended the call")
        .unwrap()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::Cancelled);
}

#[tokio::test]
async fn a_server_failure_reported_before_any_output_is_retried() {
    let exhausted = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"insufficient_system_resource\"}]}\n\n";
    let limited =
        "data: {\"error\":{\"message\":\"slow down\",\"code\":\"rate_limit_exceeded\"}}\n\n";
    let server = MockModelServer::start(vec![
        MockResponse::sse_bytes(exhausted),
        MockResponse::sse_bytes(limited),
        MockResponse::sse_fixture("text_basic"),
    ])
    .await;
    let model = OpenAiModel::new(config(&server)).unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert!(
        items
            .iter()
            .any(|i| matches!(i, Ok(ModelEvent::Finish { .. })))
    );
    assert_eq!(
        server.requests().len(),
        3,
        "both early failures were retried"
    );
}

#[tokio::test]
async fn stream_options_can_be_turned_off_for_a_server_that_refuses_them() {
    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic"),
        MockResponse::sse_fixture("text_basic"),
    ])
    .await;
    let on = OpenAiModel::new(config(&server)).unwrap();
    run(&on, CancellationToken::new()).await.unwrap();
    let mut c = config(&server);
    c.stream_usage = false;
    let off = OpenAiModel::new(c).unwrap();
    run(&off, CancellationToken::new()).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].json()["stream_options"]["include_usage"], true);
    assert!(requests[1].json().get("stream_options").is_none());
    assert_eq!(requests[1].json()["stream"], true);
}

#[tokio::test]
async fn a_refused_connection_is_named_with_its_host_and_port() {
    // A port that was free a moment ago: nothing listens there now.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut config = OpenAiConfig::deepseek(Some(ApiKey::new(KEY)));
    config.base_url = format!("http://{addr}/v1");
    config.retry.max_retries = 0;
    let model = OpenAiModel::new(config).unwrap();
    let err = model
        .stream(request(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ModelErrorKind::Transport);
    assert_eq!(err.message, format!("connection refused by {addr}"));
}

#[tokio::test]
async fn each_retry_is_announced_on_the_plugin_s_event_bus() {
    let server = MockModelServer::start(vec![
        MockResponse::status(429).body(r#"{"error":{"message":"slow down"}}"#),
        MockResponse::status(503).body("busy"),
        MockResponse::text("ok"),
    ])
    .await;
    let runtime = dsh_kernel::Runtime::new();
    let model = OpenAiModel::new(config(&server)).unwrap();
    runtime
        .load(dsh_llm_openai::OpenAiPlugin::from_model(model.clone()))
        .await
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    runtime
        .scope()
        .on(move |n: &dsh_llm::RetryNotice| sink.lock().unwrap().push(n.clone()))
        .unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert!(items.iter().all(Result::is_ok));
    let seen = seen.lock().unwrap().clone();
    let lines: Vec<(String, u32, u32)> = seen
        .iter()
        .map(|n| (n.reason.clone(), n.retry, n.max_retries))
        .collect();
    assert_eq!(
        lines,
        [
            ("server busy (HTTP 429)".to_owned(), 1, 2),
            ("server error (HTTP 503)".to_owned(), 2, 2)
        ]
    );
    assert_eq!(seen[0].session_id, request().session_id);
    runtime.shutdown().await;
}

#[tokio::test]
async fn the_first_byte_has_its_own_longer_wait_and_its_own_message() {
    // A local model reading a long prompt: headers at once, the first event after a while
    // longer than the idle wait between chunks.
    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic").first_byte_delay(Duration::from_millis(600)),
    ])
    .await;
    let mut c = config(&server);
    c.idle_timeout = Duration::from_millis(200);
    c.first_byte_timeout = Duration::from_secs(20);
    let model = OpenAiModel::new(c.clone()).unwrap();
    let items = run(&model, CancellationToken::new()).await.unwrap();
    assert_eq!(items[0], Ok(ModelEvent::TextDelta("Hello".into())));
    assert_eq!(server.requests().len(), 1, "nothing was retried");

    let server = MockModelServer::start(vec![
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
        MockResponse::sse_fixture("text_basic").hang_before_headers(),
    ])
    .await;
    c.base_url = format!("{}/v1", server.base_url());
    c.first_byte_timeout = Duration::from_millis(200);
    c.idle_timeout = Duration::from_secs(20);
    let model = OpenAiModel::new(c).unwrap();
    let err = match model.stream(request(), CancellationToken::new()).await {
        Err(err) => err,
        Ok(_) => panic!("a server that never answers fails the call"),
    };
    assert_eq!(err.kind, ModelErrorKind::Transport);
    assert!(
        err.message.contains("http.first_byte_timeout_secs"),
        "{err}"
    );
}
