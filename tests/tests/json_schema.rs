//! Every `dsh run --json` line, on every kind of ending, is valid against the schema kept in
//! the repository (`docs/run-json.schema.json`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

fn validator() -> jsonschema::Validator {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/run-json.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// Validates every line; returns them.
fn valid_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    let validator = validator();
    text(stdout)
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{line}: {errors:?}");
            value
        })
        .collect()
}

#[test]
fn the_schema_refuses_what_it_should() {
    let validator = validator();
    for bad in [
        serde_json::json!({"type": "turn_end"}),
        serde_json::json!({"type": "text", "text": 3}),
        serde_json::json!({"type": "nonsense"}),
        serde_json::json!({"type": "error", "code": "made_up", "message": "x"}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn a_completed_run_and_a_refused_one_give_valid_lines() {
    let sandbox = Sandbox::new();
    let done = sandbox
        .dsh(["run", "--json", "--replay", "demo", "look"])
        .output()
        .unwrap();
    let lines = valid_lines(&done.stdout);
    assert_eq!(lines.last().unwrap()["type"], "turn_end");
    assert_eq!(lines[0]["model"]["replay"], true);
    let refused = sandbox
        .dsh(["run", "--json", "--replay", "nosuch", "look"])
        .output()
        .unwrap();
    let lines = valid_lines(&refused.stdout);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["code"], "config");
    let keyless = sandbox.dsh(["run", "--json", "hi"]).output().unwrap();
    let lines = valid_lines(&keyless.stdout);
    assert_eq!(lines[0]["code"], "missing_api_key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_failure_ends_the_turn_with_a_valid_error_line() {
    let server = MockModelServer::start(vec![
        MockResponse::status(400)
            .header("content-type", "application/json")
            .body(
                r#"{"error":{"message":"messages are malformed","code":"invalid_request_error"}}"#,
            ),
    ])
    .await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.dsh([
        "run",
        "--json",
        "--base-url",
        &format!("{}/v1", server.base_url()),
        "hi",
    ]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines = valid_lines(&out.stdout);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "error");
    assert_eq!(end["error"]["code"], "bad_request");
    assert!(
        end["error"]["message"]
            .as_str()
            .unwrap()
            .contains("malformed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_lines_are_valid_and_name_its_session() {
    let server = MockModelServer::responding(|request| {
        let body = request.json();
        let child = dsh_e2e::first_user_text(&body) == "child";
        let done = body["messages"]
            .as_array()
            .is_some_and(|m| m.last().is_some_and(|m| m["role"] == "tool"));
        match (child, done) {
            (true, false) => {
                MockResponse::tool_call("bash", &serde_json::json!({"command": "true"}))
            }
            (true, true) => MockResponse::text("child done"),
            (false, false) => MockResponse::tool_call(
                "task",
                &serde_json::json!({"description": "check", "prompt": "child"}),
            ),
            (false, true) => MockResponse::text("parent done"),
        }
    })
    .await;
    let sandbox = Sandbox::new();
    let out = sandbox
        .run_against(
            &server.base_url(),
            &["--json", "--permission", "allow", "go"],
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines = valid_lines(&out.stdout);
    let parent = lines[0]["session_id"].as_str().unwrap().to_owned();
    let announced: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "subagent").collect();
    let [child] = announced.as_slice() else {
        panic!("{lines:?}")
    };
    assert_eq!(child["parent_id"], parent.as_str());
    assert_eq!(child["title"], "check");
    let child_id = child["session_id"].as_str().unwrap();
    // The child's command is a line in its name; the parent's lines name no session.
    assert!(
        lines.iter().any(|l| l["type"] == "tool_call"
            && l["name"] == "bash"
            && l["session_id"] == child_id)
    );
    assert!(
        lines.iter().any(|l| l["type"] == "tool_call"
            && l["name"] == "task"
            && l.get("session_id").is_none())
    );
    assert_eq!(lines.last().unwrap()["type"], "turn_end");
    assert!(lines.last().unwrap().get("session_id").is_none());
}
