//! Errors a person can read: retries shown while they happen, and a final error that names
//! what failed, the HTTP status and the host, and what to do about a refused key — with no
//! tracing lines on a default run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use dsh_e2e::pty::Terminal;
use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use dsh_test_support::tree::write;

/// `dsh --config <retries> --base-url <server> run hi`, with `env` set.
async fn run(sandbox: &Sandbox, base_url: &str, retries: u32, env: &[(&str, &str)]) -> Output {
    let config = sandbox.root.path().join("config.toml");
    write(&config, format!("[http]\nmax_retries = {retries}\n"));
    let mut command = sandbox.dsh([
        "--config",
        config.to_str().unwrap(),
        "--base-url",
        base_url,
        "--model",
        "m",
        "run",
        "hi",
    ]);
    for (name, value) in env {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn busy() -> MockResponse {
    MockResponse::status(429)
        .header("retry-after", "0")
        .body(r#"{"error":{"message":"slow down"}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_one_plain_line_and_the_answer_follows() {
    let server = MockModelServer::start(vec![busy(), MockResponse::text("fine")]).await;
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server.base_url(), 2, &[("DSH_API_KEY_ENV", "")]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "fine\n");
    assert!(
        stderr.contains("dsh · server busy (HTTP 429) — retrying in 0.0 s (retry 1 of 2)\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("WARN") && !stderr.contains("INFO"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_error_names_the_status_the_host_and_the_attempts() {
    let server = MockModelServer::start(vec![
        MockResponse::status(503).body("<html><title>Down</title></html>"),
        MockResponse::status(503).body("<html><title>Down</title></html>"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server.base_url(), 1, &[("DSH_API_KEY_ENV", "")]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let want = format!(
        "error: {} answered HTTP 503 Service Unavailable: an HTML error page: Down (gave up after 2 attempts)",
        server.authority()
    );
    assert!(stderr.contains(&want), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_names_the_address() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let sandbox = Sandbox::new();
    let out = run(
        &sandbox,
        &format!("http://{addr}/v1"),
        0,
        &[("DSH_API_KEY_ENV", "")],
    )
    .await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("connection refused by {addr}")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_says_where_it_came_from_or_that_none_was_sent() {
    let refused = || MockResponse::status(401).body(r#"{"error":{"message":"Invalid API key"}}"#);
    let server = MockModelServer::start(vec![refused(), refused(), refused()]).await;
    let sandbox = Sandbox::new();
    let keyless = run(&sandbox, &server.base_url(), 0, &[("DSH_API_KEY_ENV", "")]).await;
    let stderr = text(&keyless.stderr);
    assert_eq!(keyless.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("answered HTTP 401 Unauthorized: Invalid API key"),
        "{stderr}"
    );
    assert!(stderr.contains("dsh sent no key to 127.0.0.1"), "{stderr}");
    assert!(stderr.contains("DSH_API_KEY"), "{stderr}");
    let keyed = run(
        &sandbox,
        &server.base_url(),
        0,
        &[("DSH_API_KEY", "sk-wrong")],
    )
    .await;
    let stderr = text(&keyed.stderr);
    assert!(
        stderr.contains("the key came from the environment variable DSH_API_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-wrong"), "{stderr}");
    assert!(server.requests()[1].header("authorization").is_some());
    // A key variable named but not set: a server on this machine is tried without one, and
    // the hint says no key was set, not that the key was wrong.
    let unset = run(&sandbox, &server.base_url(), 0, &[]).await;
    let stderr = text(&unset.stderr);
    assert!(server.requests()[2].header("authorization").is_none());
    assert!(
        stderr.contains("no key was set, so dsh sent none to 127.0.0.1: set DSH_API_KEY="),
        "{stderr}"
    );
    assert!(!stderr.contains("the key came from"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_retry_line_is_replaced_in_place_and_cleared() {
    let server = MockModelServer::start(vec![busy(), MockResponse::text("fine")]).await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let args = [
        "--base-url",
        base.as_str(),
        "--model",
        "m",
        "run",
        "--color",
        "never",
        "hi",
    ];
    let term = Terminal::run_with(
        &sandbox,
        &args,
        &[("TERM", "xterm-256color"), ("DSH_API_KEY_ENV", "")],
    );
    let (code, seen) = tokio::task::spawn_blocking(move || term.exit_code())
        .await
        .unwrap();
    assert_eq!(code, 0, "{seen:?}");
    let status = seen
        .find("\r\u{1b}[2Kdsh · server busy (HTTP 429) — retrying in")
        .unwrap_or_else(|| panic!("{seen:?}"));
    let answer = seen.find("fine").unwrap();
    assert!(status < answer);
    assert!(
        seen[status + 1..answer].contains("\r\u{1b}[2K"),
        "cleared before the answer: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_retry_is_a_notice_only_for_a_client_that_shows_notices() {
    for notices in [true, false] {
        let server = MockModelServer::start(vec![busy(), MockResponse::text("fine")]).await;
        let sandbox = Sandbox::new();
        let base = server.base_url();
        let frames = tokio::task::spawn_blocking(move || {
            let mut acp =
                dsh_e2e::acp::AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
            let caps = if notices {
                serde_json::json!({"session": {"notices": {}}})
            } else {
                serde_json::json!({})
            };
            let id = acp.request(
                "initialize",
                serde_json::json!({"protocolVersion": 1, "clientCapabilities": caps}),
            );
            acp.response(&id);
            let session = acp.new_session(&sandbox.work());
            let (response, updates) = acp.prompt_to_end(&session, "hi");
            assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
            acp.finish();
            updates
        })
        .await
        .unwrap();
        let shown: Vec<&serde_json::Value> = frames
            .iter()
            .filter(|u| u["sessionUpdate"] == "notice")
            .collect();
        if notices {
            assert_eq!(shown.len(), 1, "{frames:?}");
            assert_eq!(shown[0]["severity"], "warning");
            let title = shown[0]["title"].as_str().unwrap();
            assert!(
                title.starts_with("server busy (HTTP 429) — retrying in"),
                "{title}"
            );
        } else {
            assert!(shown.is_empty(), "nothing extra on the wire: {frames:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_refused_key_says_that_none_was_sent_and_what_to_set() {
    let server = MockModelServer::start(vec![
        MockResponse::status(401).body(r#"{"error":{"message":"Invalid API key"}}"#),
    ])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let response = tokio::task::spawn_blocking(move || {
        let mut acp = dsh_e2e::acp::AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let (response, _) = acp.prompt_to_end(&session, "hi");
        acp.finish();
        response
    })
    .await
    .unwrap();
    let message = response["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("HTTP 401"), "{response}");
    assert!(
        message.contains("dsh sent no key to 127.0.0.1"),
        "{response}"
    );
    assert!(message.contains("DSH_API_KEY"), "{response}");
    assert_eq!(response["error"]["data"]["code"], "auth", "{response}");
}
