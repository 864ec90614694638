//! What the model calls used, as a user sees it: the footer's context against the window and
//! the session's totals, one `--json` line per call, and `usage_update` over ACP — counted by
//! the server when it reports usage, estimated (and marked so) when it does not.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

/// `dsh --base-url <server> --model m <extra…> run <run_flags…> hi`.
async fn run(server: &MockModelServer, extra: &[&str], run_flags: &[&str]) -> (String, String) {
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut args = vec!["--base-url", base.as_str(), "--model", "m"];
    args.extend_from_slice(extra);
    args.push("run");
    args.extend_from_slice(run_flags);
    args.push("hi");
    let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
    let mut command = sandbox.dsh(&args);
    command.env("DSH_API_KEY_ENV", "");
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_footer_gives_the_context_against_the_window_and_the_totals() {
    let server = MockModelServer::start(vec![MockResponse::text_with_usage(
        "fine", 6_000, 120, 4_000,
    )])
    .await;
    let (_, stderr) = run(&server, &["--context-window", "8192"], &[]).await;
    let footer = stderr.lines().last().unwrap();
    assert!(footer.contains("context 6.1k/8.2k (74%)"), "{footer}");
    assert!(
        footer.contains("in 6k (cache hit 4k) · out 120"),
        "{footer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_usage_is_estimated_and_never_shown_as_zero() {
    let server = MockModelServer::start(vec![MockResponse::text("fine")]).await;
    let (_, stderr) = run(&server, &[], &[]).await;
    let footer = stderr.lines().last().unwrap();
    assert!(footer.contains("context ~"), "{footer}");
    assert!(
        footer.contains("/32.8k"),
        "an unknown model's window: {footer}"
    );
    assert!(
        footer.contains("token usage not reported by the server"),
        "{footer}"
    );
    assert!(!footer.contains("0/0"), "{footer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_has_one_usage_line_per_model_call() {
    let server =
        MockModelServer::start(vec![MockResponse::text_with_usage("fine", 900, 10, 0)]).await;
    let (stdout, _) = run(&server, &["--context-window", "4096"], &["--json"]).await;
    let usage: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "usage")
        .collect();
    assert_eq!(usage.len(), 1, "{stdout}");
    assert_eq!(usage[0]["input_tokens"], 900);
    assert_eq!(usage[0]["output_tokens"], 10);
    assert_eq!(usage[0]["context_used"], 910);
    assert_eq!(usage[0]["context_window"], 4096);
    assert_eq!(usage[0]["estimated"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_each_model_call_is_followed_by_a_usage_update() {
    let server =
        MockModelServer::start(vec![MockResponse::text_with_usage("fine", 3_000, 20, 0)]).await;
    let base = server.base_url();
    let usage = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let mut acp = dsh_e2e::acp::AcpDriver::serving(
            &sandbox,
            &base,
            &["--permission", "allow", "--context-window", "10000"],
        );
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let (response, _) = acp.prompt_to_end(&session, "hi");
        assert_eq!(response["result"]["stopReason"], "end_turn");
        let usage = acp.usage.clone();
        acp.finish();
        usage
    })
    .await
    .unwrap();
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0]["used"], 3_020);
    assert_eq!(usage[0]["size"], 10_000);
}
