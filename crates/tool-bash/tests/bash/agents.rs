//! End to end: real agents of the agent loop, driven by the replay model, calling the bash
//! tools against the real local executor.

use std::sync::Arc;

use dsh_agent::{AgentHandle, AgentRegistry, CreateAgent, TurnOutcome, UserMessage};
use dsh_kernel::Runtime;
use dsh_llm::Model;
use dsh_session::{CancelCause, SessionStore, TurnEndReason};
use dsh_shell::{ShellExecRequest, ShellExecutor};
use dsh_test_providers::providers::{
    AgentLoopPlugin, LoopConfig, ReplayModel, ReplayScript, ShellLocalPlugin,
};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::ToolRegistryPlugin;
use serde_json::json;

use crate::support::*;

struct World {
    runtime: Runtime,
    model: Arc<ReplayModel>,
}

/// One entry per `(prompt substring, tool calls)`; each ends in a second entry's plain text.
fn script(entries: serde_json::Value) -> ReplayScript {
    let text = json!({ "version": 1, "name": "bash-e2e", "entries": entries }).to_string();
    ReplayScript::from_json_str(&text, "test").unwrap()
}

fn calls_then_done(prompt: &str, calls: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    let stream: Vec<serde_json::Value> = calls
        .into_iter()
        .map(|args| json!({ "tool_call": { "name": "bash", "arguments": args } }))
        .collect();
    vec![
        json!({ "match": { "last_user_contains": prompt }, "stream": stream }),
        json!({ "match": { "any_contains": prompt }, "stream": [ { "text": "done" } ], "finish": "stop" }),
    ]
}

impl World {
    async fn new(entries: serde_json::Value) -> World {
        let runtime = Runtime::new();
        runtime
            .scope()
            .provide::<SessionStore>(SessionStore::new())
            .unwrap();
        let model = Arc::new(ReplayModel::new(script(entries)).with_recorded_requests());
        runtime.scope().provide::<dyn Model>(model.clone()).unwrap();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        runtime
            .load(ShellLocalPlugin::new(shell_config()))
            .await
            .unwrap();
        runtime.load(BashToolsPlugin::default()).await.unwrap();
        runtime
            .load(AgentLoopPlugin::new(LoopConfig::default()))
            .await
            .unwrap();
        World { runtime, model }
    }

    async fn agent(&self, cwd: &std::path::Path) -> AgentHandle {
        let registry = self.runtime.scope().require::<dyn AgentRegistry>().unwrap();
        registry
            .create(CreateAgent::new(self.runtime.scope().clone()).with_cwd(cwd))
            .await
            .unwrap()
    }

    fn exec(&self) -> Arc<dyn ShellExecutor> {
        self.runtime.scope().require::<dyn ShellExecutor>().unwrap()
    }

    fn mine(&self, agent: &AgentHandle) -> usize {
        let exec = self.exec();
        let me = agent.agent().id().as_str().to_owned();
        exec.list()
            .iter()
            .filter(|t| exec.owner_of(t.id).as_deref() == Some(&me))
            .count()
    }
}

fn transcript(agent: &AgentHandle) -> String {
    agent
        .agent()
        .session()
        .events()
        .iter()
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn cancelling_the_turn_during_a_foreground_command_ends_its_tree() {
    let m = marker();
    let command = format!("sleep 1000.{m} & sleep 1000.{m}; wait");
    let world = World::new(json!(calls_then_done(
        "go",
        vec![json!({ "command": command })]
    )))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let agent = world.agent(dir.path()).await;
    let ticket = agent.agent().send(UserMessage::user("go")).unwrap();
    eventually("tree up", || sleepers(&m) == 2).await;
    assert!(agent.agent().cancel(CancelCause::User));
    match ticket.outcome().await {
        TurnOutcome::Ended {
            reason: TurnEndReason::Aborted { .. },
            ..
        } => {}
        other => panic!("expected an aborted turn, got {other:?}"),
    }
    all_gone(&m).await;
    eventually("not listed", || world.mine(&agent) == 0).await;
    assert!(transcript(&agent).contains("cancelled"));
    agent.dispose().await;
    world.runtime.shutdown().await;
}

#[tokio::test]
async fn disposing_an_agent_releases_its_tasks_and_no_other_agent_s() {
    let m = marker();
    let calls = vec![
        json!({ "command": format!("sleep 1000.{m} & sleep 1000.{m}; wait"), "run_in_background": true }),
        json!({ "command": format!("sleep 1000.{m}"), "run_in_background": true }),
        json!({ "command": "seq 1 100000" }),
    ];
    let world = World::new(json!(calls_then_done("go", calls))).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = world.agent(dir.path()).await;
    let other = marker();
    let exec = world.exec();
    let theirs = exec
        .start(
            exec.resolve(
                ShellExecRequest::new(format!("sleep 1000.{other}"))
                    .background(true)
                    .owner("someone-else"),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let ticket = agent.agent().send(UserMessage::user("go")).unwrap();
    assert!(matches!(
        ticket.outcome().await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Completed,
            ..
        }
    ));
    assert_eq!(
        world.mine(&agent),
        3,
        "two background tasks and the truncated run"
    );
    eventually("trees up", || sleepers(&m) == 3).await;
    agent.dispose().await;
    assert_eq!(
        alive(&m).len(),
        0,
        "dispose returned with the agent's processes alive"
    );
    assert_eq!(world.mine(&agent), 0);
    assert_eq!(sleepers(&other), 1, "another owner's task still runs");
    exec.release(theirs).await.unwrap();
    world.runtime.shutdown().await;
}

#[tokio::test]
async fn disposing_an_agent_after_a_tool_bash_reload_still_ends_its_task() {
    let m = marker();
    let calls = vec![json!({ "command": format!("sleep 1000.{m}"), "run_in_background": true })];
    let world = World::new(json!(calls_then_done("go", calls))).await;
    let dir = tempfile::tempdir().unwrap();
    let agent = world.agent(dir.path()).await;
    agent
        .agent()
        .send(UserMessage::user("go"))
        .unwrap()
        .outcome()
        .await;
    eventually("up", || sleepers(&m) == 1).await;
    world
        .runtime
        .reload(BashToolsPlugin::default())
        .await
        .unwrap();
    agent.dispose().await;
    assert_eq!(alive(&m).len(), 0);
    world.runtime.shutdown().await;
}

#[tokio::test]
async fn a_completion_notice_reaches_only_its_idle_owner_and_waits_for_its_next_prompt() {
    let mut entries = calls_then_done(
        "first",
        vec![json!({ "command": "sleep 0.2; echo hi", "run_in_background": true })],
    );
    entries.extend(calls_then_done(
        "killme",
        vec![json!({ "command": "sleep 1000", "run_in_background": true })],
    ));
    for _ in 0..30 {
        entries.push(json!({ "match": { "last_user_contains": "second" }, "stream": [ { "text": "ok" } ], "finish": "stop" }));
    }
    let world = World::new(json!(entries)).await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (world.agent(dir.path()).await, world.agent(dir.path()).await);
    a.agent()
        .send(UserMessage::user("first"))
        .unwrap()
        .outcome()
        .await;
    let exec = world.exec();
    let owned_by = |agent: &AgentHandle| {
        let me = agent.agent().id().as_str().to_owned();
        exec.list()
            .into_iter()
            .find(|t| exec.owner_of(t.id).as_deref() == Some(&me))
            .unwrap()
            .id
    };
    exec.wait(owned_by(&a)).await.unwrap();
    let notice = "finished: exit code: 0. Read its output with bash_output";
    // The notice is parked on the idle agent; each prompt opens exactly one model call, so a
    // self-started turn would show as an extra call.
    let before = world.model.calls();
    let mut prompts = 0;
    loop {
        a.agent()
            .send(UserMessage::user("second"))
            .unwrap()
            .outcome()
            .await;
        prompts += 1;
        let last = format!("{:?}", world.model.requests().last().unwrap());
        if last.contains(notice) {
            assert_eq!(last.matches(notice).count(), 1, "exactly one notice");
            assert!(
                transcript(&a).contains("tool-bash"),
                "the stored notice names its source"
            );
            break;
        }
        assert!(
            prompts < 20,
            "the notice never reached the owner's next prompt"
        );
    }
    assert_eq!(
        world.model.calls(),
        before + prompts,
        "an idle owner is not woken"
    );
    // A task its owner killed is not announced, and nobody else ever heard of A's.
    b.agent()
        .send(UserMessage::user("killme"))
        .unwrap()
        .outcome()
        .await;
    let id = owned_by(&b);
    exec.kill(id).await.unwrap();
    exec.wait(id).await.unwrap();
    b.agent()
        .send(UserMessage::user("second"))
        .unwrap()
        .outcome()
        .await;
    let last = format!("{:?}", world.model.requests().last().unwrap());
    assert!(
        !last.contains("finished:"),
        "B heard of a task: {}",
        last.len()
    );
    a.dispose().await;
    b.dispose().await;
    world.runtime.shutdown().await;
}

#[tokio::test]
async fn a_completion_during_the_reload_gap_sends_no_notice_but_the_status_stays_readable() {
    let mut entries = calls_then_done(
        "first",
        vec![json!({ "command": "sleep 0.3; echo late", "run_in_background": true })],
    );
    entries.push(json!({ "match": { "last_user_contains": "second" }, "stream": [ { "text": "ok" } ], "finish": "stop" }));
    let world = World::new(json!(entries)).await;
    let dir = tempfile::tempdir().unwrap();
    let a = world.agent(dir.path()).await;
    a.agent()
        .send(UserMessage::user("first"))
        .unwrap()
        .outcome()
        .await;
    world.runtime.unload("tool-bash").await.unwrap();
    let exec = world.exec();
    let id = exec.list()[0].id;
    exec.wait(id).await.unwrap();
    world
        .runtime
        .load(BashToolsPlugin::default())
        .await
        .unwrap();
    a.agent()
        .send(UserMessage::user("second"))
        .unwrap()
        .outcome()
        .await;
    let last = format!("{:?}", world.model.requests().last().unwrap());
    assert!(
        !last.contains("finished:"),
        "no notice is replayed after the gap"
    );
    let rig = Rig {
        runtime: world.runtime,
    };
    let cx = dsh_tools::ToolContext::for_caller(
        a.agent().id().clone(),
        rig.runtime.scope().clone(),
        None,
        dsh_kernel::CancellationToken::new(),
    );
    let text = ok(rig
        .call("bash_output", json!({"task_id": id.to_string()}), cx)
        .await);
    assert_eq!(text, "late\n[bytes 0..5 of 5]\n[status: exit code: 0]");
    a.dispose().await;
    rig.runtime.shutdown().await;
}
