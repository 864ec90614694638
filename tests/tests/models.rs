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
    let list = r#"{"object":"list","data":[{"id":"qwen3"},{"id":"llama4"}]}"#;
    let server = MockModelServer::start(vec![
        MockResponse::status(200)
            .header("content-type", "application/json")
            .body(list),
        MockResponse::status(200)
            .header("content-type", "application/json")
            .body(list),
        MockResponse::status(500).body("boom"),
    ])
    .await;
    let base = format!("{}/v1", server.base_url());
    let sandbox = Sandbox::new();
    let mut commands = [
        sandbox.dsh(["models", "--base-url", &base]),
        sandbox.dsh(["models", "--json", "--base-url", &base]),
        sandbox.dsh(["models", "--base-url", &base]),
    ];
    let mut outs = Vec::new();
    for command in &mut commands {
        let mut command = std::mem::replace(command, std::process::Command::new("true"));
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
    assert!(!sandbox.data().exists(), "listing models creates nothing");
    server.verify();
}
