//! What the model calls used, as a user sees it: the footer's context against the window and
//! the session's totals, one `--json` line per call, and `usage_update` over ACP — counted by
//! the server when it reports usage, estimated (and marked so) when it does not.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

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

/// Prices per million tokens: 2 for input, 0.5 for cached input, 8 for output, in CNY.
const PRICES: [(&str, &str); 4] = [
    ("DSH_PRICE_INPUT", "2"),
    ("DSH_PRICE_CACHED_INPUT", "0.5"),
    ("DSH_PRICE_OUTPUT", "8"),
    ("DSH_PRICE_CURRENCY", "CNY"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_prices_configured_the_footer_gives_the_run_s_cost() {
    // 600k misses at 2 + 400k hits at 0.5 + 100k out at 8 = 1.2 + 0.2 + 0.8.
    let server = MockModelServer::start(vec![MockResponse::text_with_usage(
        "fine", 1_000_000, 100_000, 400_000,
    )])
    .await;
    let sandbox = Sandbox::new();
    let base = server.base_url();
    let mut command = sandbox.dsh(["--base-url", base.as_str(), "--model", "m", "run", "hi"]);
    command.env("DSH_API_KEY_ENV", "").envs(PRICES);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let footer = stderr.lines().last().unwrap();
    assert!(footer.contains("cost 2.2000 CNY"), "{footer}");

    // One price without the other is refused before anything runs.
    let mut half = sandbox.dsh(["--base-url", base.as_str(), "--model", "m", "run", "hi"]);
    half.env("DSH_API_KEY_ENV", "").env("DSH_PRICE_INPUT", "2");
    let out = tokio::task::spawn_blocking(move || half.output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(6),
        "a configuration error: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("price.input and price.output are needed together"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_the_cost_goes_on_after_a_load_and_after_a_resume() {
    for how in ["session/load", "session/resume"] {
        let amounts = cost_after(how).await;
        assert_eq!(amounts.len(), 2, "{how}: {amounts:?}");
        assert!((amounts[0].0 - 2.2).abs() < 1e-9, "{how}: {amounts:?}");
        // The reopened session adds the first call up again (a resume without showing
        // it); the second call goes on from there.
        assert!((amounts[1].0 - 3.2).abs() < 1e-9, "{how}: {amounts:?}");
        assert_eq!(amounts[1].1, "CNY");
    }
}

/// The costs of two prompts, the second after `how` reopened the session in a new process.
async fn cost_after(how: &'static str) -> Vec<(f64, String)> {
    let server = MockModelServer::start(vec![
        MockResponse::text_with_usage("one", 1_000_000, 100_000, 400_000),
        MockResponse::text_with_usage("two", 500_000, 0, 0),
    ])
    .await;
    let base = server.base_url();
    let costs = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let start = || {
            let mut acp = dsh_e2e::acp::AcpDriver::serving_with(
                &sandbox,
                &base,
                &["--permission", "allow"],
                &PRICES,
            );
            acp.initialize(false);
            acp
        };
        let mut first = start();
        let session = first.new_session(&sandbox.work());
        first.prompt_to_end(&session, "hi");
        let mut costs = first.usage.clone();
        first.finish();

        let mut second = start();
        let id = second.request(
            how,
            json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
        );
        second.response(&id);
        second.prompt_to_end(&session, "again");
        costs.extend(second.usage.clone());
        second.finish();
        costs
    })
    .await
    .unwrap();
    costs
        .iter()
        .map(|u| {
            (
                u["cost"]["amount"].as_f64().unwrap(),
                u["cost"]["currency"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}
