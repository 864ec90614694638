//! Long sessions against a real HTTP server: a request the server refuses as longer than the
//! context — in the words of DeepSeek, OpenAI, vLLM, llama.cpp and Ollama — is compacted and
//! sent once more, and the transcript marks where.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

/// The 400 each server answers a request longer than its context with.
fn refusals() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "deepseek",
            r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (69000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
        ),
        (
            "openai",
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        ),
        (
            "vllm",
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}"#,
        ),
        (
            "llama.cpp",
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
        ),
        (
            "ollama",
            r#"{"error":{"message":"prompt too long; exceeded max context length by 4 tokens","type":"api_error","param":null,"code":null}}"#,
        ),
    ]
}

/// `dsh run <run_flags…> hi` against a server that refuses the first request with `body`,
/// then answers the summary and the retried request.
async fn refused_then_answered(
    body: &'static str,
    run_flags: &[&str],
) -> (MockModelServer, std::process::Output) {
    let server = MockModelServer::start(vec![
        MockResponse::status(400)
            .header("content-type", "application/json")
            .body(body),
        MockResponse::text("## Goal\nanswer hi"),
        MockResponse::text("hello"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut args = vec!["--base-url", base.as_str(), "--model", "m", "run"];
    args.extend_from_slice(run_flags);
    args.push("hi");
    let mut command = sandbox.dsh(&args);
    command.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    (server, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_server_s_refusal_compacts_and_the_request_is_sent_once_more() {
    for (server_kind, body) in refusals() {
        let (server, out) = refused_then_answered(body, &["--color", "never"]).await;
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{server_kind}: {stderr}");
        assert_eq!(stdout.trim(), "hello", "{server_kind}");
        assert!(
            stderr.contains("[context compacted (the server refused a long request)"),
            "{server_kind}: {stderr}"
        );
        assert!(
            stderr.contains("continues from a summary of the conversation]"),
            "no count is claimed at a first call: {stderr}"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 3, "{server_kind}");
        assert!(
            requests[1].json()["tools"].is_null()
                || requests[1].json()["tools"]
                    .as_array()
                    .is_some_and(Vec::is_empty),
            "{server_kind}: the summary request offers no tools"
        );
        let retried = requests[2].json();
        let first_user = dsh_e2e::first_user_text(&retried);
        assert!(
            first_user.contains("answer hi"),
            "{server_kind}: {first_user}"
        );
        assert!(
            first_user.ends_with("hi"),
            "{server_kind}: the prompt is kept"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_bad_request_is_not_taken_for_an_overflow() {
    let server = MockModelServer::start(vec![
        MockResponse::status(400)
            .header("content-type", "application/json")
            .body(r#"{"error":{"message":"Invalid value for temperature","type":"invalid_request_error"}}"#),
    ])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut command = sandbox.dsh(["--base-url", base.as_str(), "--model", "m", "run", "hi"]);
    command.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.requests().len(), 1, "no compaction, no retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_has_a_line_where_the_history_was_compacted() {
    let (_, openai) = refusals()[1];
    let (_server, out) = refused_then_answered(openai, &["--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let compacted: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "compacted").collect();
    assert_eq!(compacted.len(), 1, "{lines:?}");
    assert_eq!(compacted[0]["trigger"], "overflow");
    assert_eq!(compacted[0]["summary"], "## Goal\nanswer hi");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/run-json.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for line in &lines {
        assert!(validator.is_valid(line), "{line}");
    }
}
