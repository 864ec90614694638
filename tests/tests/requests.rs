//! What reaches an OpenAI-compatible server that is not DeepSeek, and the settings that shape
//! it: a default output limit, the temperature given by flag, no DeepSeek-only field, and
//! the permission mode from the configuration file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_has_an_output_limit_the_temperature_and_nothing_deepseek_only() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "echo hi"})),
        MockResponse::text("done"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.run_against(&server.base_url(), &["go"]);
    command.args(["--temperature", "0.3"]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let body = request.json();
        assert_eq!(body["max_tokens"], 8192, "a default limit: {body}");
        assert_eq!(body["temperature"], 0.3, "{body}");
    }
    let second = requests[1].json();
    let assistant: Vec<&Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1);
    assert!(assistant[0]["tool_calls"].is_array());
    assert!(
        assistant[0].get("reasoning_content").is_none(),
        "DeepSeek's field is not sent elsewhere: {second}"
    );
}

#[test]
fn the_permission_mode_can_be_set_in_the_file_and_a_refusal_names_it() {
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("config.toml");
    std::fs::write(&config, "permission = \"accept-edits\"\n").unwrap();
    let script = sandbox.script(
        "command",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "touch ran"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh_without_terminal([
            "--config",
            config.to_str().unwrap(),
            // Unconfined, a command is not an edit: it asks.
            "--sandbox",
            "full-access",
            "run",
            "--replay",
            &script,
            "go",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!sandbox.work().join("ran").exists(), "{stderr}");
    assert!(stderr.contains("edits run, commands ask first"), "{stderr}");
    let log = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(
        log.contains("dsh runs in the accept-edits permission mode and there is no terminal"),
        "the model is told the real mode"
    );
    assert!(!log.contains("--permission ask"));
}

#[test]
fn dsh_acp_takes_a_step_limit() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "steps",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "true"}}}]},
            {"stream": [{"text": "never asked"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::start(
        &sandbox,
        &script,
        &["--permission", "allow", "--max-steps", "1"],
    );
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(
        response["result"]["stopReason"], "max_turn_requests",
        "{response}"
    );
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_a_session_goes_back_to_its_server_and_model() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text("second answer"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut first = sandbox.dsh([
        "--base-url",
        &base,
        "--model",
        "local-model",
        "run",
        "first",
    ]);
    first.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || first.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // No flag names the server or the model this time.
    let mut again = sandbox.dsh(["run", "-c", "second"]);
    again.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || again.output().unwrap())
        .await
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout).trim(), "second answer");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{stderr}");
    assert_eq!(requests[1].json()["model"], "local-model");
    assert!(
        stderr.contains("session") && stderr.contains("(resumed)"),
        "{stderr}"
    );
    assert_eq!(sandbox.logs().len(), 1, "one session, continued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_default_model_is_refused_before_a_request_with_its_list() {
    let server = MockModelServer::start(Vec::new()).await;
    server.serve_models(&["qwen2.5-coder", "llama3"]);
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut command = sandbox.dsh(["--base-url", &base, "run", "hello"]);
    command.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert!(
        stderr.contains("does not offer the model deepseek-flash")
            && stderr.contains("llama3, qwen2.5-coder"),
        "{stderr}"
    );
    assert!(server.requests().is_empty(), "no chat request was sent");
    assert!(sandbox.logs().is_empty(), "no session was stored");
}
