//! The pickers an editor shows for a dsh session, against the built `dsh acp`: the model
//! (the server's `GET /models`), the reasoning level and the permission mode, as config
//! options and as ACP's older session modes; a change reaches the next request, survives a
//! load in a new process, and a value not on offer is refused naming those that are.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::{AcpDriver, Policy};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::{Value, json};

/// The option `id` of a `configOptions` list.
fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == id)
        .unwrap_or_else(|| panic!("no option {id}: {options}"))
}

fn values(option: &Value) -> Vec<String> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

fn set(acp: &mut AcpDriver, session: &str, config_id: &str, value: &str) -> Value {
    let id = acp.request(
        "session/set_config_option",
        json!({"sessionId": session, "configId": config_id, "value": value}),
    );
    acp.response(&id).0
}

fn new_session(acp: &mut AcpDriver, sandbox: &Sandbox) -> (String, Value) {
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, _) = acp.response(&id);
    let result = response["result"].clone();
    (result["sessionId"].as_str().unwrap().to_owned(), result)
}

/// [`new_session`] on a server that lists models, with the pickers once the list is in
/// them: in the answer, or in the update that follows when the list came later (no answer
/// waits for it).
fn new_listed_session(acp: &mut AcpDriver, sandbox: &Sandbox) -> (String, Value) {
    let (session, mut result) = new_session(acp, sandbox);
    if values(option(&result["configOptions"], "model")).len() < 2 {
        let update = acp.until("the model list", |f| {
            f["params"]["sessionId"] == session.as_str()
                && f["params"]["update"]["sessionUpdate"] == "config_option_update"
        });
        result["configOptions"] = update["params"]["update"]["configOptions"].clone();
    }
    (session, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_model_and_reasoning_level_reach_the_next_request() {
    let server =
        MockModelServer::start(vec![MockResponse::text("one"), MockResponse::text("two")]).await;
    server.serve_models(&["mock-model", "mock-large"]);
    let base = server.base_url();
    let (answers, options) = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let mut acp = AcpDriver::serving(&sandbox, &base, &["--permission", "allow"]);
        acp.initialize(false);
        let (session, created) = new_listed_session(&mut acp, &sandbox);
        acp.prompt_to_end(&session, "first");
        let model = set(&mut acp, &session, "model", "mock-large");
        let level = set(&mut acp, &session, "thought_level", "low");
        let wrong = set(&mut acp, &session, "model", "gpt-none");
        let wrong_level = set(&mut acp, &session, "thought_level", "extreme");
        let wrong_id = set(&mut acp, &session, "speed", "fast");
        acp.prompt_to_end(&session, "second");
        acp.finish();
        (
            vec![model, level, wrong, wrong_level, wrong_id],
            created["configOptions"].clone(),
        )
    })
    .await
    .unwrap();
    // What session/new offered: the server's models, the levels, the modes.
    let model = option(&options, "model");
    assert_eq!(model["category"], "model");
    assert_eq!(model["type"], "select");
    assert_eq!(model["currentValue"], "mock-model");
    assert_eq!(values(model), ["mock-large", "mock-model"]);
    let thought = option(&options, "thought_level");
    assert_eq!(thought["category"], "thought_level");
    assert_eq!(thought["currentValue"], "default");
    assert_eq!(
        values(thought),
        ["default", "off", "low", "medium", "high", "max"]
    );
    let mode = option(&options, "mode");
    assert_eq!(mode["currentValue"], "allow");
    assert_eq!(values(mode), ["ask", "accept-edits", "allow"]);
    // Each change answers the whole set, with the new value current.
    let after = &answers[0]["result"]["configOptions"];
    assert_eq!(option(after, "model")["currentValue"], "mock-large");
    assert_eq!(after.as_array().unwrap().len(), 3);
    let after = &answers[1]["result"]["configOptions"];
    assert_eq!(option(after, "thought_level")["currentValue"], "low");
    assert_eq!(option(after, "model")["currentValue"], "mock-large");
    // A value not on offer is refused, naming those that are.
    for (refused, names) in [
        (&answers[2], "mock-large, mock-model"),
        (&answers[3], "off, low, medium, high, max"),
        (&answers[4], "model, thought_level and mode"),
    ] {
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{message}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].json()["model"], "mock-model");
    assert!(requests[0].json().get("reasoning_effort").is_none());
    assert_eq!(requests[1].json()["model"], "mock-large");
    assert_eq!(requests[1].json()["reasoning_effort"], "low");
    assert_eq!(server.model_listings().len(), 1, "asked for once");
    server.verify();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_survives_a_load_in_a_new_process_and_a_flag_overrides_it_in_the_terminal() {
    let server = MockModelServer::start(vec![
        MockResponse::text("one"),
        MockResponse::text("two"),
        MockResponse::text("three"),
        MockResponse::text("four"),
    ])
    .await;
    server.serve_models(&["mock-model", "mock-large"]);
    let base = server.base_url();
    let (loaded, log) = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let mut first = AcpDriver::serving(&sandbox, &base, &[]);
        first.initialize(false);
        let (session, _) = new_listed_session(&mut first, &sandbox);
        set(&mut first, &session, "model", "mock-large");
        set(&mut first, &session, "mode", "accept-edits");
        first.prompt_to_end(&session, "first");
        first.finish();

        let mut again = AcpDriver::serving(&sandbox, &base, &[]);
        again.initialize(false);
        let id = again.request(
            "session/load",
            json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
        );
        let (loaded, _) = again.response(&id);
        again.prompt_to_end(&session, "second");
        again.finish();

        // In the terminal: the session's choice holds, unless a flag says otherwise.
        for args in [
            vec!["--base-url", &base, "run", "-c", "third"],
            vec![
                "--base-url",
                &base,
                "--model",
                "mock-model",
                "run",
                "-c",
                "fourth",
            ],
        ] {
            let out = sandbox
                .dsh(&args)
                .env("DSH_API_KEY_ENV", "")
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", dsh_e2e::text(&out.stderr));
        }
        let log = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
        (loaded["result"].clone(), log)
    })
    .await
    .unwrap();
    let options = &loaded["configOptions"];
    assert_eq!(option(options, "model")["currentValue"], "mock-large");
    assert_eq!(option(options, "mode")["currentValue"], "accept-edits");
    assert_eq!(loaded["modes"]["currentModeId"], "accept-edits");
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.json()["model"].clone())
        .collect();
    assert_eq!(
        models,
        ["mock-large", "mock-large", "mock-large", "mock-model"],
        "chosen, after the load, in the terminal, and with --model"
    );
    let changes: Vec<Value> = log
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "config/changed")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(
        changes,
        [
            json!({"key": "model", "old": "mock-model", "new": "mock-large", "origin": "acp"}),
            json!({"key": "mode", "old": "ask", "new": "accept-edits", "origin": "acp"}),
            // With the first prompt: where this process sends the session's requests.
            json!({"key": "server", "new": server.base_url(), "origin": "flag"}),
            json!({"key": "model", "old": "mock-large", "new": "mock-model", "origin": "flag"}),
        ]
    );
    server.verify();
}

fn edit_then_bash(sandbox: &Sandbox) -> String {
    sandbox.script(
        "s",
        json!([
            {"stream": [{"tool_call": {"name": "write",
                "arguments": {"path": "made.txt", "content": "x\n"}}}]},
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "echo ran"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn accept_edits_lets_an_edit_through_while_bash_still_asks() {
    let sandbox = Sandbox::new();
    // Unconfined, a command is not an edit: it asks.
    let mut acp = AcpDriver::start(
        &sandbox,
        &edit_then_bash(&sandbox),
        &["--sandbox", "full-access"],
    );
    acp.policy = Policy::Allow;
    acp.initialize(false);
    let (session, created) = new_session(&mut acp, &sandbox);
    assert_eq!(
        option(&created["configOptions"], "mode")["currentValue"],
        "ask"
    );
    let changed = set(&mut acp, &session, "mode", "accept-edits");
    assert_eq!(
        option(&changed["result"]["configOptions"], "mode")["currentValue"],
        "accept-edits"
    );
    // A client that follows session modes is told too.
    let told = acp.until_update("current_mode_update");
    assert_eq!(told["params"]["update"]["currentModeId"], "accept-edits");
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(acp.asked.len(), 1, "only bash asked: {:?}", acp.asked);
    assert_eq!(acp.asked[0]["params"]["toolCall"]["title"], "echo ran");
    assert_eq!(
        std::fs::read_to_string(sandbox.work().join("made.txt")).unwrap(),
        "x\n"
    );
    acp.finish();
}

#[test]
fn accept_edits_runs_a_sandboxed_command_unasked_and_confined_to_the_project() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "confined",
        json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "touch inside; touch ../outside"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut acp = AcpDriver::start(&sandbox, &script, &["--permission", "accept-edits"]);
    acp.policy = Policy::Allow;
    acp.initialize(false);
    let (session, _) = new_session(&mut acp, &sandbox);
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(
        acp.asked.is_empty(),
        "a sandboxed command asked: {:?}",
        acp.asked
    );
    assert!(sandbox.work().join("inside").exists());
    assert!(!sandbox.root.path().join("outside").exists());
    acp.finish();
}

#[test]
fn set_mode_and_the_mode_option_are_one_setting() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &edit_then_bash(&sandbox), &[]);
    acp.initialize(false);
    let (session, created) = new_session(&mut acp, &sandbox);
    assert_eq!(created["modes"]["currentModeId"], "ask");
    let modes: Vec<&str> = created["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["ask", "accept-edits", "allow"]);

    let id = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "allow"}),
    );
    let (response, _) = acp.response(&id);
    assert_eq!(response["result"], json!({}), "{response}");
    // A client that follows config options is told of the mode option's new value.
    let told = acp.until_update("config_option_update");
    let options = &told["params"]["update"]["configOptions"];
    assert_eq!(option(options, "mode")["currentValue"], "allow");
    // Allow: the edit and the command run without a question.
    let (response, _) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(acp.asked.is_empty(), "{:?}", acp.asked);

    let id = acp.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "yolo"}),
    );
    let (refused, _) = acp.response(&id);
    assert_eq!(refused["error"]["code"], -32602);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ask, accept-edits, allow"),
        "{refused}"
    );
    let back = set(&mut acp, &session, "mode", "ask");
    assert_eq!(
        option(&back["result"]["configOptions"], "mode")["currentValue"],
        "ask"
    );
    let id = acp.request(
        "session/set_mode",
        json!({"sessionId": "no-such-session", "modeId": "ask"}),
    );
    let (unknown, _) = acp.response(&id);
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    assert_eq!(unknown["error"]["data"]["sessionId"], "no-such-session");
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_waits_for_the_model_list_which_follows_as_an_update() {
    let server = MockModelServer::start(Vec::new()).await;
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let body = json!({"object": "list", "data": [{"id": "mock-model"}, {"id": "mock-large"}]});
    server.serve_models_with(
        MockResponse::status(200)
            .header("content-type", "application/json")
            .body(body.to_string())
            .held_by(release.clone()),
    );
    let base = server.base_url();
    let (answered, update) = tokio::task::spawn_blocking(move || {
        let sandbox = Sandbox::new();
        let mut acp = AcpDriver::serving(&sandbox, &base, &[]);
        acp.initialize(false);
        // The list is held: the answer comes anyway, with the configured model.
        let id = acp.request(
            "session/new",
            json!({"cwd": sandbox.work(), "mcpServers": []}),
        );
        let (response, _) = acp.response(&id);
        let session = response["result"]["sessionId"].as_str().unwrap().to_owned();
        release.notify_one();
        let update = acp.until("the model list", |f| {
            f["params"]["sessionId"] == session.as_str()
                && f["params"]["update"]["sessionUpdate"] == "config_option_update"
        });
        acp.finish();
        (response["result"]["configOptions"].clone(), update)
    })
    .await
    .unwrap();
    assert_eq!(values(option(&answered, "model")), ["mock-model"]);
    let later = &update["params"]["update"]["configOptions"];
    assert_eq!(values(option(later, "model")), ["mock-large", "mock-model"]);
    assert_eq!(option(later, "model")["currentValue"], "mock-model");
}
