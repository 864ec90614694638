//! What the model is told, seen from outside: the built binary against a mock
//! OpenAI-compatible server on 127.0.0.1, with the system message of each request body
//! asserted, and the recorded `context/instructions` events read back through
//! `dsh sessions show --system`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use dsh_test_support::tree::{git, write};
use serde_json::{Value, json};

/// `dsh run` in `cwd` against `server`, with `args` before the prompt.
async fn run(sandbox: &Sandbox, server: &MockModelServer, cwd: &Path, args: &[&str]) -> Output {
    let mut command: Command =
        sandbox.dsh(["--base-url", &server.base_url(), "--model", "mock-model"]);
    command
        .env("DSH_API_KEY_ENV", "")
        .current_dir(cwd)
        .arg("run")
        .args(args);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn system(request: &Value) -> String {
    let first = &request["messages"][0];
    assert_eq!(first["role"], "system", "{request}");
    first["content"].as_str().unwrap().to_owned()
}

fn users(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The recorded system text (`--system`), or every record (`--system --json`).
fn recorded(sandbox: &Sandbox, json: bool) -> String {
    let id = sandbox.first_session_id();
    let mut args = vec!["sessions", "show", "--system", id.as_str()];
    if json {
        args.push("--json");
    }
    let out = sandbox.dsh(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

fn at(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_holds_the_prompt_the_environment_and_every_instruction_file() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")]).await;
    let sandbox = Sandbox::new();
    let repo = sandbox.work();
    git(&repo, &["init", "-q", "-b", "feature/x"]);
    write(repo.join("AGENTS.md"), "ROOT: run make check\n");
    write(repo.join("crates/CLAUDE.md"), "CRATES: from CLAUDE.md\n");
    write(repo.join("crates/app/AGENTS.md"), "APP: no unwrap\n");
    write(
        sandbox.root.path().join("home/.config/dsh/AGENTS.md"),
        "USER: answer in English\n",
    );
    let cwd = repo.join("crates/app");
    let out = run(&sandbox, &server, &cwd, &["hello"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let sent = system(&server.requests()[0].json());
    assert!(sent.starts_with("You are dsh, a coding agent."), "{sent}");
    assert!(
        sent.contains("read in a terminal"),
        "the terminal's sentence"
    );
    assert!(sent.contains(&format!("- Working directory: {}", cwd.display())));
    assert!(sent.contains(&format!(
        "- Git: repository at {}, branch feature/x",
        repo.display()
    )));
    assert!(sent.contains("- Model: mock-model"));
    assert!(sent.contains("- Tools: bash, bash_kill, bash_output"));
    assert!(
        sent.contains("`bash` runs builds"),
        "the bash tool's guidance"
    );
    let order = [
        "USER: answer",
        "ROOT: run",
        "CRATES: from",
        "APP: no unwrap",
    ];
    let places: Vec<usize> = order.iter().map(|n| at(&sent, n)).collect();
    assert!(places.windows(2).all(|w| w[0] < w[1]), "{sent}");
    assert!(sent.contains(&format!(
        "## {}\n\nAPP: no unwrap",
        cwd.join("AGENTS.md").display()
    )));
    assert_eq!(users(&server.requests()[0].json()), ["hello"]);

    // Model-visible means logged: the record holds exactly what was sent.
    assert_eq!(recorded(&sandbox, false), sent);
    let record: Value = serde_json::from_str(recorded(&sandbox, true).trim()).unwrap();
    let paths: Vec<&str> = record["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 5, "{paths:?}");
    assert!(
        record["sources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["sha256"].as_str().unwrap().len() == 64)
    );
    assert_eq!(record["environment"]["git"]["head"], "feature/x");
    server.verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_file_is_cut_and_a_file_that_is_not_utf8_skipped_with_warnings() {
    let server = MockModelServer::start(vec![MockResponse::text("ok")]).await;
    let sandbox = Sandbox::new();
    let repo = sandbox.work();
    git(&repo, &["init", "-q"]);
    write(
        repo.join("AGENTS.md"),
        "a long rule that goes on\n".repeat(2000),
    );
    write(repo.join("sub/AGENTS.md"), b"\xff\xfeLATIN1 \xe9\n");
    let out = run(&sandbox, &server, &repo.join("sub"), &["hello"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent = system(&server.requests()[0].json());
    assert!(sent.contains(
        "[dsh: the rest of this file was cut here: instruction files are limited to 32 KiB in all]"
    ));
    assert!(!sent.contains("LATIN1"));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} was cut to its first",
            repo.join("AGENTS.md").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{} was skipped: it is not UTF-8 text",
            repo.join("sub/AGENTS.md").display()
        )),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_file_replaces_the_builtin_text_and_discovery_turns_off() {
    let server =
        MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    let sandbox = Sandbox::new();
    let repo = sandbox.work();
    write(repo.join("AGENTS.md"), "PROJECT RULE\n");
    write(
        sandbox.root.path().join("prompt.md"),
        "You review code tersely.\n",
    );
    let out = run(
        &sandbox,
        &server,
        &repo,
        &[
            "--system-prompt-file",
            "../prompt.md",
            "--no-project-instructions",
            "hi",
        ],
    )
    .await;
    // Flags are global: they may also come before the command.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent = system(&server.requests()[0].json());
    assert!(
        sent.starts_with("You review code tersely.\n\n# Environment"),
        "{sent}"
    );
    assert!(!sent.contains("PROJECT RULE") && !sent.contains("You are dsh"));

    // The same two settings from a configuration file and the environment, shown with
    // their sources by `dsh config`.
    let config = sandbox.root.path().join("config.toml");
    write(&config, "system_prompt_file = \"prompt.md\"\n");
    let mut command = sandbox.dsh(["--config", config.to_str().unwrap(), "config"]);
    command.env("DSH_PROJECT_INSTRUCTIONS", "false");
    let shown = text(&command.output().unwrap().stdout);
    assert!(
        shown.contains(&format!(
            "system_prompt_file = \"{}\"  # file {}:1",
            sandbox.root.path().join("prompt.md").display(),
            config.display()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("project_instructions = false  # env DSH_PROJECT_INSTRUCTIONS"),
        "{shown}"
    );

    let missing = run(
        &sandbox,
        &server,
        &repo,
        &["--system-prompt-file", "/no/such/prompt.md", "hi"],
    )
    .await;
    assert_eq!(missing.status.code(), Some(6), "a configuration error");
    assert!(text(&missing.stderr).contains("system_prompt_file /no/such/prompt.md"));
    assert_eq!(server.requests().len(), 1, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_sends_the_recorded_text_until_an_agents_file_changes() {
    let server = MockModelServer::start(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let repo = sandbox.work();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(repo.join("AGENTS.md"), "FIRST RULE\n");
    for prompt in ["one", "two"] {
        let args: &[&str] = if prompt == "one" {
            &["one"]
        } else {
            &["-c", "two"]
        };
        let out = run(&sandbox, &server, &repo, args).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        // A branch switch between the runs changes nothing: the prefix stays cacheable.
        git(&repo, &["checkout", "-q", "-b", "other"]);
    }
    let requests = server.requests();
    assert_eq!(
        system(&requests[1].json()),
        system(&requests[0].json()),
        "byte-identical"
    );
    assert_eq!(recorded(&sandbox, true).lines().count(), 1);

    write(repo.join("AGENTS.md"), "SECOND RULE\n");
    let out = run(&sandbox, &server, &repo, &["-c", "three"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let third = system(&server.requests()[2].json());
    assert!(third.contains("SECOND RULE") && !third.contains("FIRST RULE"));
    assert_eq!(recorded(&sandbox, true).lines().count(), 2);
    assert_eq!(recorded(&sandbox, false), third);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_whose_turn_failed_stays_in_the_history() {
    let server = MockModelServer::start(vec![
        MockResponse::status(500).body("{\"error\":{\"message\":\"boom\"}}"),
        MockResponse::text("answered"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("config.toml");
    write(&config, "[http]\nmax_retries = 0\n");
    let config = config.display().to_string();
    let work = sandbox.work();
    let failed = run(
        &sandbox,
        &server,
        &work,
        &["--config", &config, "list the files"],
    )
    .await;
    assert_ne!(failed.status.code(), Some(0));
    let out = run(
        &sandbox,
        &server,
        &work,
        &["--config", &config, "-c", "try again"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second = server.requests()[1].json();
    assert_eq!(users(&second), ["list the files\n\ntry again"]);
    assert_eq!(system(&second), recorded(&sandbox, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_before_the_record_existed_resumes_and_gets_one() {
    let server =
        MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")]).await;
    let sandbox = Sandbox::new();
    let work = sandbox.work();
    let out = run(&sandbox, &server, &work, &["hello"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Keep this session's header, put an older dsh's events under it.
    let log = sandbox.logs().remove(0);
    let header = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let old = dsh_test_support::stored::BEFORE_TYPED_RECORDS;
    let events: Vec<&str> = old.lines().skip(1).collect();
    std::fs::write(&log, format!("{header}\n{}\n", events.join("\n"))).unwrap();
    assert_eq!(
        sandbox
            .dsh(["sessions", "show", "--system", &sandbox.first_session_id()])
            .output()
            .unwrap()
            .status
            .code(),
        Some(1),
        "nothing recorded yet"
    );
    let out = run(&sandbox, &server, &work, &["-c", "go on"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let request = server.requests()[1].json();
    assert!(system(&request).starts_with("You are dsh"));
    assert!(
        users(&request)[0].starts_with("Look at this"),
        "the old history is sent"
    );
    assert_eq!(recorded(&sandbox, false), system(&request));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_s_session_is_told_it_is_in_an_editor_and_a_load_sends_the_recorded_text() {
    let server =
        MockModelServer::start(vec![MockResponse::text("a"), MockResponse::text("b")]).await;
    let sandbox = Sandbox::new();
    write(sandbox.work().join("AGENTS.md"), "EDITOR PROJECT RULE\n");
    let base = server.base_url();
    let mut acp = AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
    acp.initialize(false);
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": [],
               "systemPrompt": {"mode": "append", "content": [{"type": "text", "text": "FROM ZED"}]}}),
    );
    let (response, _) = acp.response(&id);
    let session = response["result"]["sessionId"].as_str().unwrap().to_owned();
    let (done, _) = acp.prompt_to_end(&session, "hi");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let first = system(&server.requests()[0].json());
    assert!(
        first.contains("read in the user's editor") && first.contains("- Interface: editor (ACP)")
    );
    assert!(
        at(&first, "EDITOR PROJECT RULE") < at(&first, "FROM ZED"),
        "{first}"
    );
    assert!(first.ends_with("# Additional instructions\n\nFROM ZED\n"));

    // A later connection loads it without resending the prompt: the recorded text is sent.
    let mut acp = AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
    acp.initialize(false);
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (loaded, _) = acp.response(&id);
    assert!(loaded["error"].is_null(), "{loaded}");
    let (done, _) = acp.prompt_to_end(&session, "again");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        system(&server.requests()[1].json()),
        first,
        "byte-identical after a load"
    );
    assert_eq!(recorded(&sandbox, true).lines().count(), 1);
}

#[test]
fn the_demo_records_what_the_model_was_told() {
    let sandbox = Sandbox::new();
    write(sandbox.work().join("AGENTS.md"), "DEMO PROJECT RULE\n");
    let out = sandbox
        .dsh(["run", "--replay", "demo", "look"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = recorded(&sandbox, false);
    assert!(shown.starts_with("You are dsh, a coding agent."), "{shown}");
    assert!(shown.contains("- Model: replay:demo") && shown.contains("DEMO PROJECT RULE"));
    let log = std::fs::read_to_string(sandbox.logs().remove(0)).unwrap();
    let kinds: Vec<String> = log
        .lines()
        .skip(1)
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds[..2], ["context/instructions", "turn/start"]);
}
