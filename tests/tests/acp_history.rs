//! The session history an editor shows, against the built `dsh acp`: `session/list` with the
//! cwd filter and pages, `session/resume` (no replay, the model's history whole),
//! `session/close` (the agent goes, the log stays) and `session/delete`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use serde_json::{Value, json};

fn script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "s",
        json!([
            {"match": {"last_user_contains": "hello"}, "stream": [{"text": "hi there"}],
             "finish": "stop"},
            {"match": {"last_user_contains": "later"}, "stream": [{"text": "later on"}],
             "finish": "stop"}
        ]),
    )
}

/// A session stored by a first process that said "hello"; its id.
fn stored(sandbox: &Sandbox, script: &str) -> String {
    let mut first = AcpDriver::allowing(sandbox, script);
    first.initialize(false);
    let session = first.new_session(&sandbox.work());
    first.prompt_to_end(&session, "hello");
    first.finish();
    session
}

/// `count` more sessions like the stored `log`, each under a fresh id.
fn copies(log: &std::path::Path, count: usize) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    (0..count)
        .map(|i| {
            let id = format!("01a24000-0000-7000-8000-{i:012}");
            header["id"] = json!(id);
            let path = log.with_file_name(format!("{id}.jsonl"));
            std::fs::write(&path, format!("{header}\n{rest}")).unwrap();
            id
        })
        .collect()
}

fn list(acp: &mut AcpDriver, params: Value) -> Value {
    let id = acp.request("session/list", params);
    let (response, _) = acp.response(&id);
    response
}

#[test]
fn the_list_is_newest_first_a_page_at_a_time_and_filtered_by_directory() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let first = stored(&sandbox, &script);
    let log = sandbox.logs().pop().unwrap();
    let mut ids: HashSet<String> = copies(&log, 249).into_iter().collect();
    ids.insert(first);
    // One session elsewhere, which the filter leaves out.
    let elsewhere = sandbox.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut other = AcpDriver::allowing(&sandbox, &script);
    other.initialize(false);
    let outside = other.new_session(&elsewhere);
    other.prompt_to_end(&outside, "hello");
    other.finish();

    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let response = list(&mut acp, json!({"cwd": sandbox.work(), "cursor": cursor}));
        let result = &response["result"];
        let sessions = result["sessions"].as_array().unwrap();
        assert!(sessions.len() <= 50, "{}", sessions.len());
        for session in sessions {
            assert_eq!(session["cwd"], json!(sandbox.work()));
            assert!(session["updatedAt"].as_str().unwrap().ends_with('Z'));
            seen.push((
                session["updatedAt"].as_str().unwrap().to_owned(),
                session["sessionId"].as_str().unwrap().to_owned(),
            ));
        }
        pages += 1;
        cursor = result["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 5);
    assert_eq!(seen.len(), 250);
    let listed: HashSet<String> = seen.iter().map(|(_, id)| id.clone()).collect();
    assert_eq!(listed, ids, "every session of the directory, once");
    assert!(
        seen.windows(2).all(|w| w[0].0 >= w[1].0),
        "newest first: {seen:?}"
    );

    let everything = list(&mut acp, json!({}));
    assert_eq!(
        everything["result"]["sessions"].as_array().unwrap().len(),
        50
    );
    assert!(everything["result"]["nextCursor"].is_string());
    let bad = list(&mut acp, json!({"cursor": "not a cursor"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let relative = list(&mut acp, json!({"cwd": "work"}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    // A filter no session can have is refused, not taken for "every directory".
    let nul = list(&mut acp, json!({"cwd": "/work\u{0}x"}));
    assert_eq!(nul["error"]["code"], -32602, "{nul}");
    acp.finish();
}

#[test]
fn a_resumed_session_sends_nothing_back_and_the_model_still_has_its_history() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let session = stored(&sandbox, &script);
    let (mut acp, log) = AcpDriver::logging(&sandbox, &script, &["--permission", "allow"]);
    acp.initialize(false);
    let id = acp.request(
        "session/resume",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, before) = acp.response(&id);
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert!(
        before.iter().all(|f| f["method"] != "session/update"),
        "nothing is replayed: {before:?}"
    );
    let (response, updates) = acp.prompt_to_end(&session, "later");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(updates.iter().any(|u| u["content"]["text"] == "later on"));
    let calls = std::fs::read_to_string(&log).unwrap();
    let call: Value = serde_json::from_str(calls.lines().last().unwrap()).unwrap();
    assert_eq!(
        call["messages"], 4,
        "system, the earlier prompt and answer, the new prompt: {call}"
    );
    acp.finish();
}

#[test]
fn a_closed_session_is_gone_from_the_connection_and_stays_in_the_list() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    acp.prompt_to_end(&session, "hello");
    let id = acp.request("session/close", json!({"sessionId": session}));
    let (response, _) = acp.response(&id);
    assert_eq!(response["result"], json!({}), "{response}");
    // The agent is gone: a prompt finds no session.
    let id = acp.prompt(&session, "later");
    let (response, _) = acp.response(&id);
    assert_eq!(response["error"]["code"], -32002, "{response}");
    let again = acp.request("session/close", json!({"sessionId": session}));
    let (response, _) = acp.response(&again);
    assert_eq!(response["error"]["code"], -32002, "{response}");
    let listed = list(&mut acp, json!({"cwd": sandbox.work()}));
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], json!(session));
    // And it comes back with its history.
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, before) = acp.response(&id);
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert!(
        before
            .iter()
            .any(|f| f["params"]["update"]["content"]["text"] == "hi there")
    );
    acp.finish();
}

#[test]
fn a_session_open_anywhere_is_not_deleted_and_a_closed_one_is() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let session = stored(&sandbox, &script);
    let delete = |acp: &mut AcpDriver| {
        let id = acp.request("session/delete", json!({"sessionId": session}));
        acp.response(&id).0
    };

    // Open in another process: refused there and here alike.
    let mut holder = AcpDriver::allowing(&sandbox, &script);
    holder.initialize(false);
    let id = holder.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    holder.response(&id);
    let refused = delete(&mut holder);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("close it first"),
        "{refused}"
    );
    let mut other = AcpDriver::allowing(&sandbox, &script);
    other.initialize(false);
    let refused = delete(&mut other);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(sandbox.logs().len() == 1, "the log is still there");

    // Closed: deleted, then gone from the list; deleting again succeeds silently.
    let id = holder.request("session/close", json!({"sessionId": session}));
    holder.response(&id);
    holder.finish();
    assert_eq!(delete(&mut other)["result"], json!({}));
    assert!(sandbox.logs().is_empty());
    let listed = list(&mut other, json!({}));
    assert_eq!(listed["result"]["sessions"], json!([]));
    assert_eq!(delete(&mut other)["result"], json!({}));
    other.finish();
}

#[test]
fn the_first_prompt_titles_the_session_in_the_editor_and_in_the_list() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let long = format!("hello {}\nsecond line", "x".repeat(100));
    acp.prompt_to_end(&session, &long);
    acp.prompt_to_end(&session, "later");
    let title = format!("hello {}…", "x".repeat(73));
    assert_eq!(
        acp.titles_of(&session),
        std::slice::from_ref(&title),
        "once, when first known"
    );
    assert_eq!(title.chars().count(), 80);
    let listed = list(&mut acp, json!({"cwd": sandbox.work()}));
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions[0]["title"], json!(title), "{listed}");
    acp.finish();

    // A session `dsh run` wrote is listed with its title too.
    let out = sandbox
        .dsh(["run", "--replay", &script, "hello from the terminal"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let mut again = AcpDriver::allowing(&sandbox, &script);
    again.initialize(false);
    let listed = list(&mut again, json!({}));
    let titles: Vec<&str> = listed["result"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["hello from the terminal", title.as_str()]);
    // A load gives the title back with the prompt that made it.
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    again.response(&id);
    assert_eq!(again.titles_of(&session), [title]);
    again.finish();
}
