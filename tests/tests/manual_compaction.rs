//! Compaction the user asks for, and compacted sessions across processes: `dsh run --compact`
//! on a stored session (alone or before a prompt), a compacted session resumed by a new
//! `dsh run -c` and loaded over ACP, and `compaction_update` only for a client that
//! advertised compaction.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::{AcpDriver, update_kinds};
use dsh_e2e::{Sandbox, first_user_text, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

/// `dsh --base-url <server> --model m run <args…>` in the sandbox; its output.
async fn run(sandbox: &Sandbox, server: &MockModelServer, args: &[&str]) -> std::process::Output {
    let mut command = sandbox.run_against(&server.base_url(), args);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

const SUMMARY: &str = "## Goal\nkeep the first question";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_compacted_alone_is_resumed_from_its_summary_in_a_new_process() {
    let server = MockModelServer::start(vec![
        MockResponse::text_with_usage("first answer", 5_000, 20, 0),
        MockResponse::text(SUMMARY),
        MockResponse::text("second answer"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let first = run(
        &sandbox,
        &server,
        &["--color", "never", "the first question"],
    )
    .await;
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));

    let compacted = run(&sandbox, &server, &["-c", "--compact", "--color", "never"]).await;
    let stderr = text(&compacted.stderr);
    assert_eq!(compacted.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&compacted.stdout), "", "no prompt, no answer");
    assert!(
        stderr.contains(
            "[context compacted (asked for): the model continues from a summary of 5020 tokens"
        ),
        "{stderr}"
    );
    let footer = stderr.lines().last().unwrap();
    assert!(footer.contains("completed"), "{footer}");
    assert!(
        footer.contains("context ~") && footer.contains("/32.8k"),
        "the context after the compaction, estimated: {footer}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let summary_request = requests[1].json();
    assert!(
        summary_request["tools"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "the summary request offers no tools"
    );
    assert!(
        summary_request.to_string().contains("the first question"),
        "the summary request holds the conversation"
    );

    let resumed = run(&sandbox, &server, &["-c", "--color", "never", "and then?"]).await;
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(text(&resumed.stdout).trim(), "second answer");
    let next = server.requests()[2].json();
    let opening = first_user_text(&next);
    assert!(opening.contains(SUMMARY), "{opening}");
    assert!(
        opening.ends_with("the first question\n\nand then?"),
        "the kept question, then the new one: {opening}"
    );
    assert!(
        !next.to_string().contains("first answer"),
        "the summarised answer is not sent again"
    );

    // The transcript people read keeps everything.
    let id = sessions_newest(&sandbox);
    let shown = sandbox
        .dsh(["sessions", "show", id.as_str(), "--color", "never"])
        .output()
        .unwrap();
    let shown = text(&shown.stdout);
    for part in [
        "the first question",
        "first answer",
        "context compacted",
        "and then?",
    ] {
        assert!(shown.contains(part), "{part}: {shown}");
    }
}

/// The id of the newest stored session.
fn sessions_newest(sandbox: &Sandbox) -> String {
    let out = sandbox
        .dsh(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let line = text(&out.stdout).lines().next().unwrap().to_owned();
    serde_json::from_str::<Value>(&line).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_then_a_prompt_sends_the_prompt_after_the_summary() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text(SUMMARY),
        MockResponse::text("second answer"),
    ])
    .await;
    let sandbox = Sandbox::new();
    run(&sandbox, &server, &["the first question"]).await;
    let out = run(
        &sandbox,
        &server,
        &["-c", "--compact", "--json", "and then?"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let compacted = kinds.iter().position(|k| *k == "compacted").unwrap();
    let answered = kinds.iter().position(|k| *k == "message").unwrap();
    assert!(compacted < answered, "{kinds:?}");
    assert_eq!(lines[compacted]["trigger"], "manual");
    assert!(lines[compacted]["tokens_after"].as_u64().unwrap() > 0);
    assert_eq!(lines.last().unwrap()["reason"], "completed");
    let opening = first_user_text(&server.requests()[2].json());
    assert!(opening.ends_with("and then?"), "{opening}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_needs_a_stored_session_and_says_so_before_creating_one() {
    let server = MockModelServer::start(vec![]).await;
    let sandbox = Sandbox::new();
    let out = run(&sandbox, &server, &["--compact"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("compacting needs a stored session: add -c"),
        "{}",
        text(&out.stderr)
    );
    assert!(server.requests().is_empty());
    let listed = sandbox
        .dsh(["sessions", "list", "--all", "--json"])
        .output()
        .unwrap();
    assert_eq!(text(&listed.stdout), "", "no session was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_the_server_refuses_fails_the_compaction_and_skips_the_prompt() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::status(400)
            .header("content-type", "application/json")
            .body(r#"{"error":{"message":"Invalid value for temperature","type":"invalid_request_error"}}"#),
    ])
    .await;
    let sandbox = Sandbox::new();
    run(&sandbox, &server, &["the first question"]).await;
    let out = run(&sandbox, &server, &["-c", "--compact", "and then?"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("the summary request failed"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests().len(), 2, "the prompt was not sent");
}

/// A `dsh acp` with a 4,096-token window against `server`, whose client advertised `caps`.
fn acp(sandbox: &Sandbox, server: &MockModelServer, caps: Value) -> AcpDriver {
    let mut driver = AcpDriver::serving_with(
        sandbox,
        &server.base_url(),
        &["--permission", "allow"],
        &[("DSH_CONTEXT_WINDOW", "4096")],
    );
    driver.initialize_with(caps);
    driver
}

/// A prompt that fills a 4,096-token window, then one that compacts first.
async fn compacting_server() -> MockModelServer {
    MockModelServer::start(vec![
        MockResponse::text_with_usage("first answer", 3_600, 10, 0),
        MockResponse::text(SUMMARY),
        MockResponse::text("second answer"),
    ])
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_client_that_advertised_compaction_sees_it_start_and_finish() {
    let server = compacting_server().await;
    let sandbox = Sandbox::new();
    let mut client = acp(&sandbox, &server, json!({"session": {"compaction": {}}}));
    let session = client.new_session(&sandbox.work());
    client.prompt_to_end(&session, "the first question");
    let (response, updates) = client.prompt_to_end(&session, "and then?");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let compactions: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "compaction_update")
        .collect();
    assert_eq!(compactions.len(), 2, "{:?}", update_kinds(&updates));
    assert_eq!(compactions[0]["status"], "in_progress");
    assert_eq!(compactions[1]["status"], "completed");
    assert_eq!(
        compactions[0]["compactionId"],
        compactions[1]["compactionId"]
    );
    assert_eq!(compactions[1]["summary"][0]["text"], SUMMARY);
    assert!(
        !updates.iter().any(|u| u["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("context compacted"))),
        "no text mark besides the update"
    );
    // The usage after the compaction is what it left, before the answer's own.
    let used: Vec<u64> = client
        .usage
        .iter()
        .map(|u| u["used"].as_u64().unwrap())
        .collect();
    assert_eq!(used[0], 3_610);
    assert!(used[1] < 3_610, "{used:?}");
    client.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_client_without_compaction_gets_only_a_mark_live_and_on_load() {
    let server = compacting_server().await;
    let sandbox = Sandbox::new();
    let mut client = acp(&sandbox, &server, json!({}));
    let session = client.new_session(&sandbox.work());
    client.prompt_to_end(&session, "the first question");
    let (_, updates) = client.prompt_to_end(&session, "and then?");
    assert!(
        updates
            .iter()
            .all(|u| u["sessionUpdate"] != "compaction_update"),
        "{:?}",
        update_kinds(&updates)
    );
    assert!(updates.iter().any(|u| {
        u["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("context compacted"))
    }));
    client.finish();

    // A new process loads it: the whole transcript, with the mark where it was compacted,
    // and a client that advertised compaction gets the summary there instead.
    for (caps, marked) in [
        (json!({}), true),
        (json!({"session": {"compaction": {}}}), false),
    ] {
        let mut loader = acp(&sandbox, &server, caps);
        let id = loader.request(
            "session/load",
            json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
        );
        let (response, before) = loader.response(&id);
        assert!(response.get("result").is_some(), "{response}");
        let replay: Vec<Value> = before
            .into_iter()
            .filter(|f| f["method"] == "session/update")
            .map(|f| f["params"]["update"].clone())
            .collect();
        let texts: Vec<String> = replay
            .iter()
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect();
        let at = |part: &str| {
            texts
                .iter()
                .position(|t| t.contains(part))
                .unwrap_or_else(|| panic!("{part}: {texts:?}"))
        };
        assert!(at("the first question") < at("first answer"));
        assert!(at("first answer") < at("and then?"));
        assert!(at("and then?") < at("second answer"));
        let completed = replay
            .iter()
            .position(|u| u["sessionUpdate"] == "compaction_update");
        match marked {
            true => {
                assert!(completed.is_none());
                let mark = at("context compacted");
                assert!(at("first answer") < mark && mark < at("second answer"));
            }
            false => {
                let completed = completed.unwrap();
                assert_eq!(replay[completed]["status"], "completed");
                assert_eq!(replay[completed]["summary"][0]["text"], SUMMARY);
            }
        }
        loader.finish();
    }
    assert_eq!(server.requests().len(), 3, "a load asks the model nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_compact_cancels_it_and_the_session_is_unchanged() {
    let server = MockModelServer::start(vec![
        MockResponse::text("first answer"),
        MockResponse::text("never used").hang_before_headers(),
    ])
    .await;
    let sandbox = Sandbox::new();
    run(&sandbox, &server, &["the first question"]).await;
    let base = server.base_url();
    let mut command = sandbox.dsh([
        "--base-url",
        base.as_str(),
        "--model",
        "m",
        "run",
        "-c",
        "--compact",
        "--color",
        "never",
    ]);
    command
        .env("DSH_API_KEY_ENV", "")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    server.wait_arrival(1).await;
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("dsh · cancelled"), "{stderr}");
    assert!(!stderr.contains("context compacted"), "{stderr}");
    let id = sessions_newest(&sandbox);
    let log = sandbox
        .dsh(["sessions", "show", id.as_str(), "--json"])
        .output()
        .unwrap();
    assert!(
        !text(&log.stdout).contains("context/compacted"),
        "nothing was compacted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_cancel_during_a_compaction_ends_the_prompt_and_says_so() {
    let server = MockModelServer::start(vec![
        MockResponse::text_with_usage("first answer", 3_600, 10, 0),
        MockResponse::text("never used").hang_before_headers(),
    ])
    .await;
    let sandbox = Sandbox::new();
    let mut client = acp(&sandbox, &server, json!({"session": {"compaction": {}}}));
    let session = client.new_session(&sandbox.work());
    client.prompt_to_end(&session, "the first question");
    let id = client.prompt(&session, "and then?");
    client.until("the compaction starts", |f| {
        f["params"]["update"]["sessionUpdate"] == "compaction_update"
    });
    client.notify("session/cancel", json!({"sessionId": session}));
    let (response, before) = client.response(&id);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let statuses: Vec<&Value> = before
        .iter()
        .filter(|f| f["params"]["update"]["sessionUpdate"] == "compaction_update")
        .map(|f| &f["params"]["update"]["status"])
        .collect();
    assert_eq!(statuses, [&json!("cancelled")], "{before:?}");
    client.finish();
}
