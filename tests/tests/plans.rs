//! The model's plan (the `todo` tool), against the built binary: recorded as `plan/updated`,
//! shown by `dsh run` each time it changes (and as a `plan` line of `--json`), sent to an
//! editor as `plan` updates (and `plan_update` to a client that takes those); a bad plan is
//! the model's error, and the plan stays as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, text};
use serde_json::{Value, json};

fn planning(sandbox: &Sandbox) -> String {
    sandbox.script(
        "plan",
        json!([
            {"stream": [{"tool_call": {"name": "todo", "arguments": {"todos": [
                {"content": "read the parser", "status": "in_progress"},
                {"content": "fix the bug", "status": "pending"}
            ]}}}]},
            {"stream": [{"tool_call": {"name": "todo", "arguments": {"todos": [
                {"content": "read the parser", "status": "in_progress"},
                {"content": "fix the bug", "status": "in_progress"}
            ]}}}]},
            {"stream": [{"tool_call": {"name": "todo", "arguments": {"todos": [
                {"content": "read the parser", "status": "completed"},
                {"content": "fix the bug", "status": "in_progress"}
            ]}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn dsh_run_shows_the_plan_each_time_it_changes_and_refuses_a_bad_one() {
    let sandbox = Sandbox::new();
    let script = planning(&sandbox);
    let out = sandbox
        .dsh(["run", "--replay", &script, "fix the parser"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        shown.contains("plan (0 of 2 done)\n  [>] read the parser\n  [ ] fix the bug\n"),
        "{shown}"
    );
    assert!(
        shown.contains("plan (1 of 2 done)\n  [x] read the parser\n  [>] fix the bug\n"),
        "{shown}"
    );
    assert_eq!(
        shown.matches("plan (").count(),
        2,
        "the refused one is not shown: {shown}"
    );
    // Each plan once: not the raw call, not the result's text, only the plan.
    assert!(!shown.contains("\"todos\""), "{shown}");
    assert_eq!(shown.matches("read the parser").count(), 2, "{shown}");
    assert!(
        shown.contains("▸ todo\n[error: ") && shown.contains("2 steps are in_progress"),
        "a refused plan says whose failure it is: {shown}"
    );
    let log = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    let events: Vec<Value> = log
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let plans: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "plan/updated")
        .collect();
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[1]["data"]["entries"][1]["status"], "in_progress");
    let refused = events
        .iter()
        .filter(|e| e["type"] == "tool/result")
        .nth(1)
        .unwrap();
    assert_eq!(refused["data"]["is_error"], true);
    assert!(
        refused["data"]["content"]
            .as_str()
            .unwrap()
            .contains("2 steps are in_progress"),
        "{refused}"
    );
}

#[test]
fn json_output_has_a_plan_line_per_change() {
    let sandbox = Sandbox::new();
    let script = planning(&sandbox);
    let out = sandbox
        .dsh(["run", "--json", "--replay", &script, "fix the parser"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plans: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "plan")
        .collect();
    assert_eq!(plans.len(), 2);
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "read the parser", "status": "in_progress"},
            {"content": "fix the bug", "status": "pending"}
        ])
    );
}

fn plan_updates(updates: &[Value], kind: &str) -> Vec<Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .cloned()
        .collect()
}

#[test]
fn an_editor_gets_plan_updates_and_plan_update_only_when_it_takes_them() {
    let sandbox = Sandbox::new();
    let script = planning(&sandbox);
    for takes_plan_update in [false, true] {
        let mut acp = AcpDriver::allowing(&sandbox, &script);
        let caps = if takes_plan_update {
            json!({"plan": {}})
        } else {
            json!({})
        };
        acp.initialize_with(caps);
        let session = acp.new_session(&sandbox.work());
        let (response, updates) = acp.prompt_to_end(&session, "fix the parser");
        assert_eq!(response["result"]["stopReason"], "end_turn");
        let plans = plan_updates(&updates, "plan");
        assert_eq!(plans.len(), 2, "{updates:?}");
        assert_eq!(
            plans[1]["entries"],
            json!([
                {"content": "read the parser", "priority": "medium", "status": "completed"},
                {"content": "fix the bug", "priority": "medium", "status": "in_progress"}
            ])
        );
        let replacing = plan_updates(&updates, "plan_update");
        if takes_plan_update {
            assert_eq!(replacing.len(), 2, "{updates:?}");
            assert_eq!(replacing[0]["plan"]["type"], "items");
            assert_eq!(replacing[0]["plan"]["planId"], "todo");
            assert_eq!(replacing[1]["plan"]["entries"], plans[1]["entries"]);
        } else {
            assert!(replacing.is_empty(), "{updates:?}");
        }
        acp.finish();
    }
}
