//! `dsh acp` in `ask` mode (the default): each bash call is announced waiting, the editor
//! is asked, and anything but a clear yes refuses the call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::{AcpDriver, Policy};
use serde_json::{Value, json};

fn touching(sandbox: &Sandbox) -> String {
    sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "touch made && echo made"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

fn ask(sandbox: &Sandbox, script: &str, policy: Policy) -> (AcpDriver, String) {
    let mut acp = AcpDriver::start(sandbox, script, &[]);
    acp.policy = policy;
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    (acp, session)
}

#[test]
fn ask_is_the_default_and_an_allowed_call_runs_after_the_answer() {
    let sandbox = Sandbox::new();
    let (mut acp, session) = ask(&sandbox, &touching(&sandbox), Policy::Allow);
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let call = &updates[0];
    assert_eq!(call["sessionUpdate"], "tool_call");
    assert!(
        call.get("status").is_none(),
        "pending is the default: {call}"
    );
    assert_eq!(acp.asked.len(), 1);
    let asked = &acp.asked[0]["params"];
    assert_eq!(asked["sessionId"], session.as_str());
    assert_eq!(asked["toolCall"]["toolCallId"], call["toolCallId"]);
    assert_eq!(asked["toolCall"]["title"], "touch made && echo made");
    assert_eq!(asked["toolCall"]["status"], "pending");
    let options: Vec<&str> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    // Between the two, the command's output may arrive as it runs (updates without status).
    let statuses: Vec<&Value> = updates[1..]
        .iter()
        .map(|u| &u["status"])
        .filter(|s| !s.is_null())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    assert!(sandbox.work().join("made").exists());
    acp.finish();
}

#[test]
fn reject_an_error_an_unknown_option_and_a_dismissal_all_refuse_the_call() {
    for policy in [
        Policy::Reject,
        Policy::Error,
        Policy::Bogus,
        Policy::Dismiss,
    ] {
        let sandbox = Sandbox::new();
        let script = touching(&sandbox);
        let (mut acp, log) = AcpDriver::logging(&sandbox, &script, &[]);
        acp.policy = policy;
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let (response, updates) = acp.prompt_to_end(&session, "go");
        assert_eq!(response["result"]["stopReason"], "end_turn", "{policy:?}");
        assert_eq!(updates[1]["status"], "failed", "{policy:?}: {updates:?}");
        assert!(!sandbox.work().join("made").exists(), "{policy:?}");
        acp.finish();
        let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
        assert!(
            stored.contains("declined this call"),
            "{policy:?}: the model is told: {stored}"
        );
        assert!(log.exists());
    }
}

#[test]
fn allow_always_is_remembered_for_the_project_and_not_another() {
    let sandbox = Sandbox::new();
    // Two projects, each a repository of its own (a project is the nearest `.git` up).
    let elsewhere = sandbox.root.path().join("elsewhere");
    for project in [sandbox.work(), elsewhere.clone()] {
        std::fs::create_dir_all(project.join(".git")).unwrap();
    }
    let script = sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo 1"}}}]},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo 2"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo 3"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo 4"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let (mut acp, first) = ask(&sandbox, &script, Policy::Always);
    let (_, updates) = acp.prompt_to_end(&first, "go");
    assert_eq!(acp.asked.len(), 1, "one question for two calls");
    let labels: Vec<&str> = acp.asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels[1], "Always allow bash commands starting with `echo` in this project",
        "{labels:?}"
    );
    let second_call = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .nth(1)
        .unwrap();
    assert_eq!(second_call["status"], "in_progress");
    // The log says what was remembered, and for which project.
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(stored.contains(r#""type":"permission/rule""#), "{stored}");
    assert!(stored.contains(r#""rule":"bash(echo:*)""#), "{stored}");
    // A second session of the project is not asked, and announces the call running.
    let again = acp.new_session(&sandbox.work());
    let (_, updates) = acp.prompt_to_end(&again, "go");
    assert_eq!(acp.asked.len(), 1, "not asked again in the project");
    assert_eq!(updates[0]["status"], "in_progress", "{updates:?}");
    // Another project's session is.
    let other = acp.new_session(&elsewhere);
    acp.prompt_to_end(&other, "go");
    assert_eq!(acp.asked.len(), 2, "another project is asked");
    acp.finish();
    // Nothing was written into either repository.
    assert!(
        std::fs::read_dir(sandbox.work().join(".git"))
            .unwrap()
            .next()
            .is_some()
    );
    assert!(!sandbox.work().join(".dsh").exists());
    // `dsh permissions` lists it, and `rm` forgets it.
    let listed = sandbox.dsh(["permissions"]).output().unwrap();
    let shown = dsh_e2e::text(&listed.stdout);
    assert!(shown.contains("   1  bash(echo:*)"), "{shown}");
    assert!(!shown.contains("elsewhere"), "only this project's: {shown}");
    // The other project's question was answered "always" too: it has its own.
    let all = dsh_e2e::text(
        &sandbox
            .dsh(["permissions", "--all"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(all.contains("elsewhere"), "{all}");
    let rm = sandbox.dsh(["permissions", "rm", "1"]).output().unwrap();
    assert_eq!(rm.status.code(), Some(0), "{}", dsh_e2e::text(&rm.stderr));
    assert!(dsh_e2e::text(&rm.stdout).contains("forgot bash(echo:*)"));
    let listed = dsh_e2e::text(&sandbox.dsh(["permissions"]).output().unwrap().stdout);
    assert!(
        listed.contains("no \"always\" answers remembered"),
        "{listed}"
    );
    let missing = sandbox.dsh(["permissions", "rm", "1"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn allow_mode_never_asks_and_announces_calls_running() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &touching(&sandbox), &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (_, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(updates[0]["status"], "in_progress");
    assert!(acp.asked.is_empty());
    acp.finish();
    assert!(sandbox.work().join("made").exists());
}

#[test]
fn a_cancel_while_asking_withdraws_the_question_and_runs_nothing() {
    let sandbox = Sandbox::new();
    let (mut acp, session) = ask(&sandbox, &touching(&sandbox), Policy::Hold);
    let prompt = acp.prompt(&session, "go");
    let asked = acp.until("the question", |f| {
        f["method"] == "session/request_permission"
    });
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, before) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    assert!(
        before
            .iter()
            .any(|f| f["method"] == "$/cancel_request" && f["params"]["requestId"] == asked["id"]),
        "the dialog is withdrawn: {before:?}"
    );
    assert!(
        before
            .iter()
            .any(|f| f["params"]["update"]["status"] == "failed")
    );
    // A late answer is dropped.
    acp.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}}));
    acp.finish();
    assert!(!sandbox.work().join("made").exists());
}

#[test]
fn closing_stdin_while_asking_exits_without_running_the_call() {
    let sandbox = Sandbox::new();
    let (mut acp, session) = ask(&sandbox, &touching(&sandbox), Policy::Hold);
    acp.prompt(&session, "go");
    acp.until("the question", |f| {
        f["method"] == "session/request_permission"
    });
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("agents=0 sessions=0"), "{stderr}");
    assert!(!sandbox.work().join("made").exists());
}

#[test]
fn allow_always_holds_after_a_reload_in_a_new_process() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.work().join(".git")).unwrap();
    let script = sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "echo 1"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"},
            {"stream": [{"tool_call": {"name": "bash", "arguments": {"command": "make && echo x"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let (mut acp, session) = ask(&sandbox, &script, Policy::Always);
    acp.prompt_to_end(&session, "go");
    assert_eq!(acp.asked.len(), 1);
    acp.finish();

    let mut again = AcpDriver::start(&sandbox, &script, &[]);
    again.initialize(false);
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (loaded, _) = again.response(&id);
    assert!(loaded["result"]["configOptions"].is_array(), "{loaded}");
    let (response, updates) = again.prompt_to_end(&session, "go again");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(again.asked.is_empty(), "remembered across processes");
    assert_eq!(updates[0]["status"], "in_progress", "{updates:?}");
    // A chained command is not what `echo` was allowed for (each process replays the
    // script from its start: this is its second call).
    again.prompt_to_end(&session, "chain");
    assert_eq!(again.asked.len(), 1, "a chained command asks");
    again.finish();
}

#[test]
fn without_landlock_allow_mode_asks_before_every_command_and_says_why_on_stderr() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.dsh([
        "--replay",
        &touching(&sandbox),
        "acp",
        "--permission",
        "allow",
    ]);
    command.env("DSH_SANDBOX_LANDLOCK", "off");
    let mut acp = AcpDriver::spawn(command);
    acp.policy = Policy::Allow;
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(acp.asked.len(), 1, "asked though the mode is allow");
    assert!(
        updates[0].get("status").is_none(),
        "announced waiting: {updates:?}"
    );
    assert!(sandbox.work().join("made").exists(), "ran after the yes");
    let (_, stderr) = acp.finish();
    assert!(stderr.contains("sandbox cannot start here"), "{stderr}");
}
