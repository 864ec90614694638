//! Subagents as a user meets them: the built binary, a model server on 127.0.0.1 that
//! answers each agent by its task (the first user message of the request), real bash.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, first_user_text, recording_server, text, tool_results};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse, Recorded};
use serde_json::json;

/// Whether the request already carries a tool result: the agent's call came back.
fn answered(request: &serde_json::Value) -> bool {
    request["messages"]
        .as_array()
        .is_some_and(|m| m.last().is_some_and(|m| m["role"] == "tool"))
}

/// The parent delegates two tasks at once; each child runs one command and answers.
fn two_tasks(request: &Recorded) -> MockResponse {
    let body = request.json();
    let prompt = first_user_text(&body);
    let done = answered(&body);
    match prompt.split_once(':') {
        Some(("child", name)) if !done => MockResponse::tool_call(
            "bash",
            &json!({"command": format!("echo from-{name}"), "description": "say hello"}),
        ),
        Some(("child", name)) => MockResponse::text(&format!("child {name} found 42")),
        _ if !done => MockResponse::tool_calls(&[
            (
                "task",
                json!({"description": "look at a", "prompt": "child:a"}),
            ),
            (
                "task",
                json!({"description": "look at b", "prompt": "child:b"}),
            ),
        ]),
        _ => MockResponse::text("both children answered"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_run_as_children_whose_work_shows_under_their_cards() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let server = MockModelServer::responding(move |request| {
        sink.lock().unwrap().push(request.json());
        two_tasks(request)
    })
    .await;
    let sandbox = Sandbox::new();
    let out = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "delegate"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("both children answered"), "{stdout}");
    // Each child's command shows under its task, named by the task's words.
    assert!(stderr.contains("▸ task look at a"), "{stderr}");
    assert!(stderr.contains("↳ look at a · $ echo from-a"), "{stderr}");
    assert!(stderr.contains("↳ look at b · $ echo from-b"), "{stderr}");
    assert!(stderr.contains("↳ look at a · done"), "{stderr}");
    // The parent's model read each child's answer as the call's result.
    let requests = seen.lock().unwrap().clone();
    let last = requests
        .iter()
        .rev()
        .find(|body| first_user_text(body) == "delegate")
        .unwrap();
    let results: Vec<String> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].starts_with("child a found 42"), "{results:?}");
    assert!(results[1].starts_with("child b found 42"), "{results:?}");
    // Three sessions stored; the list shows the parent alone unless asked.
    assert_eq!(sandbox.logs().len(), 3);
    let listed = sandbox.dsh(["sessions", "list"]).output().unwrap();
    let listed = text(&listed.stdout);
    assert!(listed.contains("2 more of a subagent"), "{listed}");
    // The parent's transcript names its children, and shows their work when asked.
    let listed = sandbox
        .dsh(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let parent = listed["session_id"].as_str().unwrap().to_owned();
    let shown = sandbox.dsh(["sessions", "show", &parent]).output().unwrap();
    let shown = text(&shown.stdout);
    assert!(
        shown.contains("subagents (--children shows their work here):"),
        "{shown}"
    );
    assert_eq!(shown.matches("  dsh sessions show ").count(), 2, "{shown}");
    let inline = sandbox
        .dsh(["sessions", "show", "--children", &parent])
        .output()
        .unwrap();
    let inline = text(&inline.stdout);
    let a = inline.find("↳ look at a · $ echo from-a").expect(&inline);
    let b = inline.find("↳ look at b · $ echo from-b").expect(&inline);
    let answered = inline.find("both children answered").expect(&inline);
    assert!(a < answered && b < answered, "{inline}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_agent_runs_with_its_prompt_tools_and_model_and_an_unknown_one_is_listed() {
    let (server, seen) =
        recording_server(
            |body| match (first_user_text(body).as_str(), tool_results(body).len()) {
                ("review it", 0) => MockResponse::text("looks fine"),
                (_, 0) => MockResponse::tool_call(
                    "task",
                    &json!({"description": "review", "prompt": "review it", "agent": "reviewer"}),
                ),
                (_, 1) => MockResponse::tool_call(
                    "task",
                    &json!({"description": "ghost", "prompt": "x", "agent": "nobody"}),
                ),
                _ => MockResponse::text("done"),
            },
        )
        .await;
    let sandbox = Sandbox::new();
    let agents = sandbox.work().join(".dsh/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews changes\ntools: Read, Grep\nmodel: other-model\n---\nLook for bugs only.\n",
    )
    .unwrap();
    let out = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = seen.lock().unwrap().clone();
    // The parent's model is told which agents there are.
    let task = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    let listed = task["function"]["description"].as_str().unwrap();
    assert!(listed.contains("- reviewer: Reviews changes"), "{listed}");
    // The child ran on its model, with its instructions and only its tools.
    let child = requests
        .iter()
        .find(|r| first_user_text(r) == "review it")
        .unwrap();
    assert_eq!(child["model"], "other-model");
    let system = child["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You are a subagent"), "{system}");
    assert!(system.contains("Look for bugs only."), "{system}");
    let mut tools: Vec<&str> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, ["grep", "read"]);
    // An unknown agent is a tool error naming the known ones.
    let last = requests.last().unwrap();
    let error = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("no agent named `nobody`; the agents are: reviewer"),
        "{error}"
    );
}
