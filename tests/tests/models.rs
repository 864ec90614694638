//! `dsh models`: what the configured server offers, or the built-in scripts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

#[test]
fn with_replay_the_built_in_scripts_are_listed() {
    let out = Sandbox::new()
        .dsh(["models", "--replay", "demo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "demo\n");
}

#[test]
fn without_a_key_the_missing_key_guidance_is_given() {
    let out = Sandbox::new().dsh(["models"]).output().unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(text(&out.stderr).contains("no API key for https://api.deepseek.com"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_s_models_are_listed_one_per_line_or_as_json() {
    let server = MockModelServer::start(Vec::new()).await;
    server.serve_models(&["qwen3", "llama4"]);
    let base = format!("{}/v1", server.base_url());
    let sandbox = Sandbox::new();
    let mut outs = Vec::new();
    for (i, args) in [
        vec!["models", "--base-url", &base],
        vec!["models", "--json", "--base-url", &base],
        vec!["models", "--base-url", &base],
    ]
    .into_iter()
    .enumerate()
    {
        if i == 2 {
            server.serve_models_with(MockResponse::status(500).body("boom"));
        }
        let mut command = sandbox.dsh(args);
        outs.push(
            tokio::task::spawn_blocking(move || command.output().unwrap())
                .await
                .unwrap(),
        );
    }
    assert_eq!(text(&outs[0].stdout), "llama4\nqwen3\n");
    assert_eq!(text(&outs[1].stdout), "[\"llama4\",\"qwen3\"]\n");
    assert_eq!(outs[2].status.code(), Some(1));
    assert!(
        text(&outs[2].stderr).contains("status 500"),
        "{}",
        text(&outs[2].stderr)
    );
    assert_eq!(server.model_listings().len(), 3);
    assert!(!sandbox.data().exists(), "listing models creates nothing");
    server.verify();
}
