//! Subagents over ACP against the built `dsh acp`, read on the wire: a client that shows
//! child sessions gets them linked and can cancel one alone; any client's cancel of the
//! parent stops every child, with cause `parent`, and leaves no process behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, first_user_text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse, Recorded};
use dsh_test_support::processes::{marker, sleepers};
use serde_json::{Value, json};

fn answered(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .is_some_and(|m| m.last().is_some_and(|m| m["role"] == "tool"))
}

/// The parent starts one child per marker; each child sleeps under its marker.
fn sleeping_children(request: &Recorded, markers: &[String]) -> MockResponse {
    let body = request.json();
    let prompt = first_user_text(&body);
    match prompt.split_once(':') {
        Some(("child", m)) if !answered(&body) => MockResponse::tool_call(
            "bash",
            &json!({"command": format!("sleep 1000.{m}"), "description": "wait"}),
        ),
        Some(("child", _)) => MockResponse::text("child stopped"),
        _ if !answered(&body) => {
            let calls: Vec<(&str, Value)> = markers
                .iter()
                .map(|m| {
                    (
                        "task",
                        json!({"description": format!("wait {m}"), "prompt": format!("child:{m}")}),
                    )
                })
                .collect();
            MockResponse::tool_calls(&calls)
        }
        _ => MockResponse::text("parent done"),
    }
}

fn update_of(frame: &Value) -> &Value {
    &frame["params"]["update"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shown_child_is_linked_from_its_card_and_a_cancel_of_it_stops_only_it() {
    let m = marker();
    let markers = vec![m.clone()];
    let server = MockModelServer::responding(move |r| sleeping_children(r, &markers)).await;
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::serving(&sandbox, &server.base_url(), &["--permission", "allow"]);
    acp.initialize_with(json!({"subagents": {}}));
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "delegate");
    let announced = acp.until("the child's announcement", |f| {
        update_of(f)["sessionUpdate"] == "subagent_update"
    });
    assert_eq!(announced["params"]["sessionId"], session.as_str());
    let child = update_of(&announced)["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(update_of(&announced)["capabilities"], json!({"cancel": {}}));
    let link = acp.until("the task card's link", |f| {
        update_of(f)["sessionUpdate"] == "tool_call_update"
            && update_of(f)["content"][0] == json!({"type": "session", "sessionId": child})
    });
    assert_eq!(link["params"]["sessionId"], session.as_str());
    let sleeping = format!("sleep 1000.{m}");
    acp.until("the child's command", |f| {
        f["params"]["sessionId"] == child.as_str()
            && update_of(f)["sessionUpdate"] == "tool_call"
            && update_of(f)["title"] == sleeping.as_str()
    });
    acp.notify("session/cancel", json!({"sessionId": child}));
    let (response, before) = acp.response(&prompt);
    // The parent's turn went on: its model read that the child was cancelled.
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let idle = before
        .iter()
        .find(|f| update_of(f)["sessionUpdate"] == "subagent_update")
        .unwrap_or_else(|| panic!("{before:#?}"));
    assert_eq!(
        update_of(idle)["state"],
        json!({"state": "idle", "stopReason": "cancelled"})
    );
    // The card's final update (failed: its child was cancelled) keeps the link first.
    let card = &update_of(&link)["toolCallId"];
    let done = before
        .iter()
        .find(|f| update_of(f)["toolCallId"] == *card && update_of(f)["status"] == "failed")
        .unwrap_or_else(|| panic!("{before:#?}"));
    assert_eq!(
        update_of(done)["content"][0],
        json!({"type": "session", "sessionId": child})
    );
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(sleepers(&m), 0);

    // Loaded again, the child is announced with how it ended and replays as its own session.
    let mut again = AcpDriver::serving(&sandbox, &server.base_url(), &["--permission", "allow"]);
    again.initialize_with(json!({"subagents": {}}));
    let load = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, replayed) = again.response(&load);
    assert!(response.get("result").is_some(), "{response}");
    let announced = replayed
        .iter()
        .position(|f| update_of(f)["sessionUpdate"] == "subagent_update")
        .unwrap_or_else(|| panic!("{replayed:#?}"));
    assert_eq!(update_of(&replayed[announced])["sessionId"], child.as_str());
    assert_eq!(
        update_of(&replayed[announced])["state"],
        json!({"state": "idle", "stopReason": "cancelled"})
    );
    assert_eq!(
        update_of(&replayed[announced])["title"],
        format!("wait {m}")
    );
    let own = replayed
        .iter()
        .position(|f| {
            f["params"]["sessionId"] == child.as_str()
                && update_of(f)["sessionUpdate"] == "tool_call"
                && update_of(f)["title"] == sleeping.as_str()
        })
        .unwrap_or_else(|| panic!("{replayed:#?}"));
    assert!(announced < own, "announced before its traffic");
    assert!(replayed.iter().any(|f| {
        f["params"]["sessionId"] == session.as_str()
            && update_of(f)["content"][0] == json!({"type": "session", "sessionId": child})
    }));
    let (code, stderr) = again.finish();
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_stops_every_child_with_cause_parent_first() {
    let markers: Vec<String> = (0..2).map(|_| marker()).collect();
    let scripted = markers.clone();
    let server = MockModelServer::responding(move |r| sleeping_children(r, &scripted)).await;
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::serving(&sandbox, &server.base_url(), &["--permission", "allow"]);
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let prompt = acp.prompt(&session, "delegate");
    // Both children's commands show in their cards (a client without child sessions).
    let mut waiting: Vec<String> = markers
        .iter()
        .map(|m| format!("$ sleep 1000.{m}"))
        .collect();
    while !waiting.is_empty() {
        let frame = acp.until("a child's command in its card", |f| {
            update_of(f)["sessionUpdate"] == "tool_call_update"
        });
        let content = update_of(&frame)["content"].to_string();
        waiting.retain(|line| !content.contains(line.as_str()));
    }
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (response, _) = acp.response(&prompt);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    for m in &markers {
        assert_eq!(sleepers(m), 0, "the child's command is gone");
    }
    // Each child's log records its turn cancelled with cause `parent`; the parent's log
    // ends its turn after every child's.
    let logs = sandbox.logs();
    assert_eq!(logs.len(), 3, "{logs:?}");
    let mut parent = None;
    for log in &logs {
        let text = std::fs::read_to_string(log).unwrap();
        if text.contains(&session) && !text.contains("\"parent_call\"") {
            parent = Some(text);
        } else {
            assert!(text.contains("\"cause\":\"parent\""), "{text}");
            assert!(text.contains("\"type\":\"turn/end\""), "{text}");
        }
    }
    assert!(parent.is_some_and(|p| p.contains("\"type\":\"turn/end\"")));
}
