//! Slash commands, in the terminal and in an editor: `/compact`, `/init` and the user's own
//! Markdown commands with arguments, announced over ACP with `available_commands_update`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, first_user_text, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

/// `dsh --base-url <server> --model m run <args…>` in the sandbox; its output.
async fn run(sandbox: &Sandbox, server: &MockModelServer, args: &[&str]) -> std::process::Output {
    let mut command = sandbox.run_against(&server.base_url(), args);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// The project's `review` command (with `$ARGUMENTS`) and the user's `standup`.
fn user_commands(sandbox: &Sandbox) {
    let project = sandbox.work().join(".dsh/commands");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("review.md"),
        "---\ndescription: Review a file\n---\nReview $ARGUMENTS and list the bugs.\n",
    )
    .unwrap();
    let user = sandbox.root.path().join("home/.config/dsh/commands");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(
        user.join("standup.md"),
        "Write my standup from today's commits.\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_terminal_init_and_a_user_command_send_their_prompts_and_compact_compacts() {
    let server = MockModelServer::start(vec![
        MockResponse::text("reviewed"),
        MockResponse::text("AGENTS.md written"),
        MockResponse::text("## Goal\nreview"),
        MockResponse::text("it is there"),
    ])
    .await;
    let sandbox = Sandbox::new();
    user_commands(&sandbox);
    let out = run(&sandbox, &server, &["/review src/lib.rs"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let asked = first_user_text(&server.requests()[0].json());
    assert_eq!(asked, "Review src/lib.rs and list the bugs.\n");

    let out = run(&sandbox, &server, &["-c", "/init"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let request = server.requests()[1].json();
    let last = request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("AGENTS.md"),
        "{last}"
    );

    let out = run(&sandbox, &server, &["-c", "/compact"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[context compacted (asked for)"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 3);

    let out = run(&sandbox, &server, &["/compact"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a new session has nothing to compact"
    );
    let out = run(&sandbox, &server, &["/usr/bin is missing?"]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "an ordinary prompt: {}",
        text(&out.stderr)
    );
    assert_eq!(
        first_user_text(&server.requests()[3].json()),
        "/usr/bin is missing?"
    );
}

#[test]
fn an_editor_is_told_the_commands_and_each_one_works() {
    let sandbox = Sandbox::new();
    user_commands(&sandbox);
    let script = sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "Review src/main.rs"}, "stream": [{"text": "two bugs"}],
             "finish": "stop"},
            {"match": {"last_user_contains": "Write my standup"}, "stream": [{"text": "standup"}],
             "finish": "stop"},
            {"stream": [{"text": "## Goal\nreview"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let commands = acp.commands_of(&session);
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "init", "review", "standup"]);
    assert_eq!(commands[2]["description"], "Review a file");
    assert_eq!(commands[2]["input"]["hint"], "arguments");
    assert!(commands[3]["input"].is_null());

    let (response, updates) = acp.prompt_to_end(&session, "/review src/main.rs");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(
        updates.iter().any(|u| u["content"]["text"] == "two bugs"),
        "{updates:?}"
    );
    let (_, updates) = acp.prompt_to_end(&session, "/standup");
    assert!(
        updates.iter().any(|u| u["content"]["text"] == "standup"),
        "{updates:?}"
    );

    let (response, updates) = acp.prompt_to_end(&session, "/compact");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        updates.iter().any(|u| u["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("context compacted"))),
        "the compaction is shown with its prompt: {updates:?}"
    );
    let (response, _) = acp.prompt_to_end(&session, "/compact");
    assert!(
        response["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nothing new to compact")),
        "{response}"
    );

    // A loaded session is told its commands too.
    acp.finish();
    let mut again = AcpDriver::allowing(&sandbox, &script);
    again.initialize(false);
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, _) = again.response(&id);
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert_eq!(again.commands_of(&session).len(), 4);
    again.finish();
}
