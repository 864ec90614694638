//! The user's hooks, as a user configures them: `[hooks]` in their own `config.toml`, real
//! scripts, the built binary and a model server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, recording_server, text, tool_results};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

/// Writes the user's configuration with these hooks.
fn configure(sandbox: &Sandbox, hooks: &str) {
    let dir = sandbox.root.path().join("home/.config/dsh");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), hooks).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_blocks_a_command_with_its_reason_and_a_post_hook_adds_context() {
    let (server, seen) = recording_server(|body| match tool_results(body).len() {
        0 => MockResponse::tool_call("bash", &json!({"command": "rm -rf junk"})),
        1 => MockResponse::tool_call("bash", &json!({"command": "ls"})),
        _ => MockResponse::text("done"),
    })
    .await;
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.work().join("junk")).unwrap();
    // The guard reads the call from stdin as Claude Code's scripts do.
    configure(
        &sandbox,
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ command = '''input=$(cat); case "$input" in *'rm -rf'*) echo "no rm -rf in this project" >&2; exit 2;; esac''', on_error = "deny" }]

[[hooks.PostToolUse]]
matcher = "Bash"
hooks = [{ command = '''echo '{"hookSpecificOutput":{"additionalContext":"the audit saw it"}}' ''' }]
"#,
    );
    let out = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "clean up"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sandbox.work().join("junk").exists(), "the guard kept it");
    // Each run is one line of the transcript, and a record of the log.
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("hook PreToolUse · input=$(cat)"),
        "{stderr}"
    );
    assert!(stderr.contains(" · blocked · "), "{stderr}");
    assert!(stderr.contains("hook PostToolUse · echo"), "{stderr}");
    let log = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(log.contains("\"type\":\"hook/ran\""), "{log}");
    let results = tool_results(seen.lock().unwrap().last().unwrap());
    assert!(
        results[0].contains("refused this call: no rm -rf in this project"),
        "{results:?}"
    );
    assert!(results[1].contains("junk"), "ls ran: {results:?}");
    assert!(
        results[1].ends_with("[hook context: the audit saw it]"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_crashes_blocks_only_when_it_fails_closed() {
    for (on_error, runs) in [("deny", false), ("allow", true)] {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("bash", &json!({"command": "touch made"})),
            MockResponse::text("done"),
        ])
        .await;
        let sandbox = Sandbox::new();
        configure(
            &sandbox,
            &format!(
                "[[hooks.PreToolUse]]\nhooks = [{{ command = \"jq-that-is-missing .tool_name\", on_error = \"{on_error}\" }}]\n"
            ),
        );
        let out = sandbox
            .run_against(&server.base_url(), &["--permission", "allow", "go"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(
            sandbox.work().join("made").exists(),
            runs,
            "on_error = {on_error}"
        );
        // The person is told why, in the run's line.
        let stderr = text(&out.stderr);
        let decided = if runs { "failed" } else { "blocked" };
        assert!(
            stderr.contains(&format!("· {decided} · ")) && stderr.contains("exited 127"),
            "{stderr}"
        );
    }
}

/// `dsh run` with one bash call of `command`, then an answer.
async fn run_one_command(sandbox: &Sandbox, command: &str) -> std::process::Output {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("bash", &json!({"command": command})),
        MockResponse::text("done"),
    ])
    .await;
    sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "go"])
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_s_hooks_run_only_once_trusted_and_again_only_after_a_change_is_trusted() {
    let sandbox = Sandbox::new();
    let dir = sandbox.work().join(".dsh");
    std::fs::create_dir_all(&dir).unwrap();
    let guard = "[[PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ command = \"echo 'touching is not allowed' >&2; exit 2\" }]\n";
    std::fs::write(dir.join("hooks.toml"), guard).unwrap();
    // Untrusted: it does not run, and the start says so.
    let out = run_one_command(&sandbox, "touch first").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sandbox.work().join("first").exists());
    assert!(
        text(&out.stderr).contains("hooks.toml do not run: they are not trusted"),
        "{}",
        text(&out.stderr)
    );
    let listed = sandbox.dsh(["hooks"]).output().unwrap();
    let listed = text(&listed.stdout);
    assert!(listed.contains("not trusted: it does not run"), "{listed}");
    assert!(
        listed.contains("PreToolUse Bash  echo 'touching is not allowed'"),
        "{listed}"
    );
    // Trusted: it runs.
    let trusted = sandbox.dsh(["hooks", "trust"]).output().unwrap();
    assert!(
        text(&trusted.stdout).contains("trusted "),
        "{}",
        text(&trusted.stdout)
    );
    let out = run_one_command(&sandbox, "touch second").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !sandbox.work().join("second").exists(),
        "the trusted guard blocked it"
    );
    // Changed: untrusted again.
    std::fs::write(
        dir.join("hooks.toml"),
        guard.replace("touching", "touching at all"),
    )
    .unwrap();
    let out = run_one_command(&sandbox, "touch third").await;
    assert!(
        sandbox.work().join("third").exists(),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_s_settings_work_as_written_once_trusted() {
    let sandbox = Sandbox::new();
    let claude = sandbox.work().join(".claude");
    std::fs::create_dir_all(claude.join("hooks")).unwrap();
    // As Claude Code's documentation writes them: a script under the project, named through
    // `$CLAUDE_PROJECT_DIR`, reading the call with jq-free shell, timeout in seconds.
    std::fs::write(
        claude.join("settings.json"),
        r#"{
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          { "type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/log.sh", "timeout": 30 }
        ]
      }
    ]
  }
}"#,
    )
    .unwrap();
    let script = claude.join("hooks/log.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"tool_name\":\"Bash\"'*) echo ran >> \"$CLAUDE_PROJECT_DIR/audit.log\";; esac\n",
    )
    .unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let trusted = sandbox.dsh(["hooks", "trust"]).output().unwrap();
    assert!(
        text(&trusted.stdout).contains("settings.json"),
        "{}",
        text(&trusted.stdout)
    );
    let out = run_one_command(&sandbox, "true").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let audit = std::fs::read_to_string(sandbox.work().join("audit.log")).unwrap_or_default();
    assert_eq!(audit, "ran\n", "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_context_reaches_the_request_and_a_stop_hook_blocks_once() {
    let (server, seen) = recording_server(|body| match body["messages"].as_array().map(Vec::len) {
        // The system message, the prompt and the hook's context: the first answer.
        Some(n) if n <= 3 => MockResponse::text("first answer"),
        _ => MockResponse::text("checked and done"),
    })
    .await;
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        r#"
[[hooks.UserPromptSubmit]]
hooks = [{ command = "echo 'the branch is main'" }]

[[hooks.Stop]]
hooks = [{ command = '''input=$(cat); case "$input" in *'"stop_hook_active":false'*) echo '{"decision":"block","reason":"run make check first"}';; esac''' }]
"#,
    );
    let out = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("checked and done"),
        "{}",
        text(&out.stdout)
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the stop hook kept the turn going once");
    let first = requests[0]["messages"].to_string();
    assert!(first.contains("the branch is main"), "{first}");
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("run make check first"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_hook_s_ask_asks_the_editor_even_in_allow_mode() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "touch asked"})),
        MockResponse::text("done"),
    ])
    .await;
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ command = '''echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touching files needs a yes"}}' ''' }]
"#,
    );
    let mut acp =
        dsh_e2e::acp::AcpDriver::serving(&sandbox, &server.base_url(), &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(acp.asked.len(), 1, "the hook's ask reached the editor");
    assert_eq!(acp.asked[0]["params"]["toolCall"]["title"], "touch asked");
    assert!(
        sandbox.work().join("asked").exists(),
        "allowed once, it ran"
    );
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_start_hooks_say_whether_the_session_is_new_or_resumed() {
    let (server, seen) = recording_server(|_| MockResponse::text("ok")).await;
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        r#"
[[hooks.SessionStart]]
hooks = [
  { command = '''input=$(cat); case "$input" in *'"source":"resume"'*) echo 'resumed: read NOTES.md again';; *) echo 'new: the branch is main';; esac''' },
  { command = '''input=$(cat); case "$input" in *'"transcript_path":"/'*'.jsonl"'*) echo 'the log is on disk';; esac''' },
]
"#,
    );
    let first = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "hello"])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = sandbox.first_session_id();
    let again = sandbox
        .run_against(
            &server.base_url(),
            &["--session", &id, "--permission", "allow", "again"],
        )
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let requests = seen.lock().unwrap().clone();
    let first = requests[0]["messages"].to_string();
    assert!(first.contains("new: the branch is main"), "{first}");
    assert!(
        first.contains("the log is on disk"),
        "transcript_path names the log: {first}"
    );
    let second = requests[1]["messages"].to_string();
    assert!(second.contains("resumed: read NOTES.md again"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_hook_file_that_does_not_read_runs_nothing_and_says_why() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.work().join(".dsh")).unwrap();
    std::fs::write(
        sandbox.work().join(".dsh/hooks.toml"),
        "[[PreToolUze]]\nhooks = []\n",
    )
    .unwrap();
    let out = run_one_command(&sandbox, "touch made").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sandbox.work().join("made").exists());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the project's hooks do not run") && stderr.contains("`PreToolUze`"),
        "{stderr}"
    );
}

/// A project whose `.dsh/hooks.toml` adds context at the session's start and at each prompt.
fn project_with_context_hooks(sandbox: &Sandbox) {
    std::fs::create_dir_all(sandbox.work().join(".dsh")).unwrap();
    std::fs::write(
        sandbox.work().join(".dsh/hooks.toml"),
        "[[SessionStart]]\nhooks = [{ command = \"echo 'the project says: started'\" }]\n\
         [[UserPromptSubmit]]\nhooks = [{ command = \"echo 'the project says: prompted'\" }]\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_start_asks_to_trust_the_project_s_hooks() {
    let (server, seen) = recording_server(|_| MockResponse::text("ok")).await;
    let sandbox = Sandbox::new();
    project_with_context_hooks(&sandbox);
    let base_url = server.base_url();
    let args = [
        "--base-url",
        &base_url,
        "--model",
        "m",
        "run",
        "--permission",
        "allow",
        "hello",
    ];
    let env = [("TERM", "dumb"), ("DSH_API_KEY_ENV", "")];
    // Declined: the session runs without them.
    let mut term = dsh_e2e::pty::Terminal::run_with(&sandbox, &args, &env);
    term.expect("echo 'the project says: prompted'");
    term.expect("trust this file as it is now and run its hooks? [y/N]");
    term.type_keys(b"n\r");
    let (code, seen_on_screen) = term.exit_code();
    assert_eq!(code, 0, "{seen_on_screen}");
    assert!(
        seen_on_screen.contains("do not run: they are not trusted"),
        "{seen_on_screen}"
    );
    // Trusted: both of its hooks run in the session that trusted them.
    let mut term = dsh_e2e::pty::Terminal::run_with(&sandbox, &args, &env);
    term.expect("[y/N]");
    term.type_keys(b"y\r");
    let (code, seen_on_screen) = term.exit_code();
    assert_eq!(code, 0, "{seen_on_screen}");
    assert!(
        seen_on_screen.contains("hook UserPromptSubmit"),
        "{seen_on_screen}"
    );
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let declined = requests[0]["messages"].to_string();
    assert!(!declined.contains("the project says"), "{declined}");
    let trusted = requests[1]["messages"].to_string();
    assert!(trusted.contains("the project says: started"), "{trusted}");
    assert!(trusted.contains("the project says: prompted"), "{trusted}");
    // Asked once: a third start runs them without a question.
    let out = sandbox
        .run_against(&base_url, &["--permission", "allow", "again"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("not trusted"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_the_editor_is_asked_to_trust_the_session_s_project_hooks() {
    let (server, seen) = recording_server(|_| MockResponse::text("ok")).await;
    let sandbox = Sandbox::new();
    // The project is the session's directory, not the one dsh was started in.
    let project = sandbox.work().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let elsewhere = Sandbox::new();
    project_with_context_hooks(&elsewhere);
    std::fs::rename(elsewhere.work().join(".dsh"), project.join(".dsh")).unwrap();
    let mut acp = dsh_e2e::acp::AcpDriver::serving(&sandbox, &server.base_url(), &[]);
    acp.policy = dsh_e2e::acp::Policy::Hold;
    acp.initialize(false);
    for (answer, runs) in [("skip", false), ("trust", true)] {
        let session = acp.new_session(&project);
        // The first prompt asks before it reaches the model.
        let prompt = acp.prompt(&session, "go");
        let question = acp.until("the trust question", |f| {
            f["method"] == "session/request_permission"
        });
        assert_eq!(question["params"]["sessionId"], session.as_str());
        let card = question["params"]["toolCall"]["toolCallId"].clone();
        let announced = acp
            .transcript
            .iter()
            .find(|f| f["params"]["update"]["toolCallId"] == card)
            .cloned()
            .unwrap();
        // Pending, which the schema writes by leaving the status out.
        assert!(
            announced["params"]["update"]["status"].is_null(),
            "{announced}"
        );
        let title = announced["params"]["update"]["title"].as_str().unwrap();
        assert!(title.starts_with("Trust the hooks of "), "{title}");
        assert!(
            announced
                .to_string()
                .contains("echo 'the project says: prompted'"),
            "{announced}"
        );
        acp.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result":
            {"outcome": {"outcome": "selected", "optionId": answer}}}));
        let closed = acp.until("the card's end", |f| {
            f["params"]["update"]["toolCallId"] == card
                && f["params"]["update"]["status"].is_string()
        });
        let status = if runs { "completed" } else { "failed" };
        assert_eq!(closed["params"]["update"]["status"], status, "{closed}");
        let (response, _) = acp.response(&prompt);
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
        let request = seen.lock().unwrap().last().unwrap()["messages"].to_string();
        assert_eq!(
            request.contains("the project says: started"),
            runs,
            "{request}"
        );
        assert_eq!(
            request.contains("the project says: prompted"),
            runs,
            "{request}"
        );
    }
    // Trusted: the next session is not asked.
    let session = acp.new_session(&project);
    let (response, _) = acp.prompt_to_end(&session, "again");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(acp.asked.len(), 2, "asked once a session until trusted");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_cancel_withdraws_the_trust_question_and_the_next_prompt_asks_again() {
    let (server, seen) = recording_server(|_| MockResponse::text("ok")).await;
    let sandbox = Sandbox::new();
    project_with_context_hooks(&sandbox);
    let mut acp = dsh_e2e::acp::AcpDriver::serving(&sandbox, &server.base_url(), &[]);
    acp.policy = dsh_e2e::acp::Policy::Hold;
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "go");
    let asked = |f: &serde_json::Value| f["method"] == "session/request_permission";
    let question = acp.until("the trust question", asked);
    acp.notify("session/cancel", json!({"sessionId": session}));
    let withdrawn = acp.until("the withdrawal", |f| f["method"] == "$/cancel_request");
    assert_eq!(withdrawn["params"]["requestId"], question["id"]);
    let (response, _) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the model was never called"
    );
    // Asked again, and trusted: the prompt runs with them.
    let prompt = acp.prompt(&session, "go on");
    let question = acp.until("the trust question again", asked);
    acp.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result":
        {"outcome": {"outcome": "selected", "optionId": "trust"}}}));
    let (response, _) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let request = seen.lock().unwrap()[0]["messages"].to_string();
    assert!(request.contains("the project says: prompted"), "{request}");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notification_hooks_hear_of_a_question_waiting_and_of_the_agent_going_idle() {
    let server = MockModelServer::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "touch asked"})),
        MockResponse::text("done"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let heard = sandbox.root.path().join("heard");
    configure(
        &sandbox,
        &format!(
            r#"
[[hooks.Notification]]
matcher = "permission_prompt"
hooks = [{{ command = "cat >> {heard}/question", sandbox = false }}]

[[hooks.Notification]]
matcher = "idle_prompt"
hooks = [{{ command = "cat >> {heard}/idle", sandbox = false }}]
"#,
            heard = heard.display()
        ),
    );
    std::fs::create_dir_all(&heard).unwrap();
    let mut acp = dsh_e2e::acp::AcpDriver::serving(&sandbox, &server.base_url(), &[]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(acp.asked.len(), 1, "the call was asked about");
    let question: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(heard.join("question")).unwrap()).unwrap();
    assert_eq!(question["hook_event_name"], "Notification");
    assert_eq!(question["notification_type"], "permission_prompt");
    assert_eq!(question["message"], "dsh needs your permission to use Bash");
    assert_eq!(question["session_id"], session.as_str());
    let idle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(heard.join("idle")).unwrap()).unwrap();
    assert_eq!(idle["notification_type"], "idle_prompt");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_tool_use_formatter_changes_the_written_file_and_the_next_read_sees_it() {
    let (server, seen) = recording_server(|body| match tool_results(body).len() {
        0 => MockResponse::tool_call(
            "write",
            &json!({"path": "notes.txt", "content": "tidy me   \nand me  \n"}),
        ),
        1 => MockResponse::tool_call("read", &json!({"path": "notes.txt"})),
        _ => MockResponse::text("done"),
    })
    .await;
    let sandbox = Sandbox::new();
    // A formatter as users write them: the file from `tool_input.file_path`, fixed in place.
    configure(
        &sandbox,
        r#"
[[hooks.PostToolUse]]
matcher = "Write|Edit"
hooks = [{ command = '''f=$(sed -n 's/.*"file_path":"\([^"]*\)".*/\1/p'); sed -i 's/ *$//' "$f"''' }]
"#,
    );
    let out = sandbox
        .run_against(
            &server.base_url(),
            &["--permission", "allow", "write notes"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(sandbox.work().join("notes.txt")).unwrap(),
        "tidy me\nand me\n"
    );
    let results = tool_results(seen.lock().unwrap().last().unwrap());
    assert!(results[1].contains("tidy me\n"), "{results:?}");
    assert!(
        !results[1].contains("tidy me   "),
        "the read saw the formatted file"
    );
}
