//! The `task` tool over the real agent loop and session store, with a model that answers
//! each agent by its first prompt: children that answer, hang, fail or try to nest; a parent
//! cancelled with children running.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use dsh_agent::{AgentEvent, AgentRegistry, CancelCause, CreateAgent, TurnOutcome, UserMessage};
use dsh_kernel::Runtime;
use dsh_llm::{
    FinishReason, Message, Model, ModelError, ModelErrorKind, ModelEvent, ModelInfo, ModelRequest,
    ModelStream,
};
use dsh_session::{
    Interest, Session, SessionEvent, SessionId, SessionObserver, SessionStore, TurnEndReason,
};
use dsh_test_providers::providers::{AgentLoopPlugin, LoopConfig};
use dsh_tool_task::{TaskConfig, TaskPlugin};
use dsh_tools::ToolRegistryPlugin;
use futures::future::BoxFuture;
use tokio::sync::Semaphore;

/// Answers by the first user message. `parent:<children>` calls `task` once per
/// comma-separated child prompt, then says `parent done`; `ok:<x>` answers `answer <x>`;
/// `hang:<x>` never answers; `fail:<x>` fails; `nest:<x>` calls `task` itself.
struct Roles {
    info: ModelInfo,
    hanging: Arc<Semaphore>,
    nested_offers: Arc<Mutex<Vec<bool>>>,
}

fn first_user(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn answered(request: &ModelRequest) -> bool {
    request
        .messages
        .iter()
        .any(|m| matches!(m, Message::Tool { .. }))
}

fn calls(prompts: &[&str]) -> Vec<ModelEvent> {
    calls_of("task", prompts)
}

/// One call of `tool` per prompt, in one message.
fn calls_of(tool: &str, prompts: &[&str]) -> Vec<ModelEvent> {
    let mut events = Vec::new();
    for (index, prompt) in prompts.iter().enumerate() {
        let index = index as u32;
        let arguments =
            serde_json::json!({"description": format!("do {prompt}"), "prompt": prompt})
                .to_string();
        let id = format!("call_{index}");
        events.push(ModelEvent::ToolCallStart {
            index,
            id: id.clone(),
            name: tool.into(),
        });
        events.push(ModelEvent::ToolCallArgumentsDelta {
            index,
            fragment: arguments.clone(),
        });
        events.push(ModelEvent::ToolCallEnd {
            index,
            id,
            name: tool.into(),
            arguments,
        });
    }
    events.push(ModelEvent::Finish {
        reason: FinishReason::ToolCalls,
    });
    events
}

fn text(said: &str) -> Vec<ModelEvent> {
    vec![
        ModelEvent::TextDelta(said.into()),
        ModelEvent::Finish {
            reason: FinishReason::Stop,
        },
    ]
}

impl Model for Roles {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn stream(
        &self,
        request: ModelRequest,
        _cancel: dsh_llm::CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        let prompt = first_user(&request);
        let done = answered(&request);
        let hanging = self.hanging.clone();
        if prompt.starts_with("nest:") && !done {
            let offered = request.tools.iter().any(|t| t.name == "task");
            self.nested_offers.lock().unwrap().push(offered);
        }
        Box::pin(async move {
            let events = match prompt.split_once(':') {
                Some(("parent", children)) if !done => {
                    calls(&children.split(',').collect::<Vec<_>>())
                }
                Some(("parent", _)) => text("parent done"),
                Some(("ok", x)) => text(&format!("answer {x}")),
                Some(("nest", _)) if !done => calls(&["ok:deeper"]),
                Some(("nest", _)) => text("nested done"),
                Some(("stub", x)) if !done => calls_of("stubborn", &[x]),
                Some(("stub", _)) => text("stub done"),
                Some(("fail", _)) => {
                    return Err(ModelError::new(
                        ModelErrorKind::Server,
                        "the child's server is down",
                    ));
                }
                Some(("hang", _)) => {
                    hanging.add_permits(1);
                    std::future::pending::<()>().await;
                    Vec::new()
                }
                _ => text("?"),
            };
            let stream = futures::stream::iter(events.into_iter().map(Ok));
            Ok(Box::pin(stream) as ModelStream)
        })
    }
}

struct Harness {
    runtime: Arc<Runtime>,
    hanging: Arc<Semaphore>,
    events: Arc<Mutex<Vec<AgentEvent>>>,
    /// Every session's `turn/end`, in the order they were appended: (session, its parent).
    ends: Timeline,
    /// Whether each `nest:` child was offered `task`.
    nested_offers: Arc<Mutex<Vec<bool>>>,
}

/// Each `turn/end` in the order it was appended: the session, and its parent.
type Timeline = Arc<Mutex<Vec<(SessionId, Option<SessionId>)>>>;

/// Records each `turn/end` as it is appended, with the session's parent.
struct Ends(Timeline);

#[async_trait::async_trait]
impl SessionObserver for Ends {
    fn name(&self) -> &str {
        "ends"
    }

    fn on_append(&self, session: &Session, event: &Arc<SessionEvent>) {
        if event.kind.as_str() == "turn/end" {
            let header = session.header();
            self.0
                .lock()
                .unwrap()
                .push((header.id.clone(), header.parent.clone()));
        }
    }
}

/// A tool whose body never returns and ignores its cancellation: only an abort ends it.
struct Stubborn(Arc<Semaphore>);

impl dsh_tools::Tool for Stubborn {
    fn schema(&self) -> dsh_tools::ToolSchema {
        dsh_tools::ToolSchema {
            name: "stubborn".into(),
            description: "never returns".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn name(&self) -> String {
        "stubborn".into()
    }

    fn effect(&self, _: &serde_json::Value, _: &dsh_tools::Roots) -> dsh_tools::Effect {
        dsh_tools::Effect::Read
    }

    fn call(
        &self,
        _: serde_json::Value,
        _: dsh_tools::ToolContext,
    ) -> BoxFuture<'static, Result<dsh_tools::ToolOutput, dsh_tools::ToolError>> {
        let started = self.0.clone();
        Box::pin(async move {
            started.add_permits(1);
            std::future::pending().await
        })
    }
}

async fn harness(config: TaskConfig) -> Harness {
    harness_with(config, LoopConfig::default()).await
}

async fn harness_with(config: TaskConfig, loop_config: LoopConfig) -> Harness {
    let runtime = Arc::new(Runtime::new());
    let store = SessionStore::new();
    runtime
        .scope()
        .provide::<SessionStore>(store.clone())
        .unwrap();
    let ends: Timeline = Arc::default();
    store
        .subscribe(runtime.scope(), Interest::All, Arc::new(Ends(ends.clone())))
        .unwrap();
    let hanging = Arc::new(Semaphore::new(0));
    let nested_offers: Arc<Mutex<Vec<bool>>> = Arc::default();
    let model = Roles {
        nested_offers: nested_offers.clone(),
        info: ModelInfo {
            provider: "test".into(),
            model: "roles".into(),
            endpoint: None,
            replay: true,
        },
        hanging: hanging.clone(),
    };
    runtime
        .scope()
        .provide::<dyn Model>(Arc::new(model) as Arc<dyn Model>)
        .unwrap();
    runtime.load(ToolRegistryPlugin).await.unwrap();
    runtime
        .load(AgentLoopPlugin::new(loop_config))
        .await
        .unwrap();
    runtime.load(TaskPlugin::new(config)).await.unwrap();
    runtime
        .scope()
        .require::<dyn dsh_tools::ToolRegistry>()
        .unwrap()
        .register(runtime.scope(), Arc::new(Stubborn(hanging.clone())))
        .unwrap();
    let events: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
    let sink = events.clone();
    runtime
        .scope()
        .on(move |e: &AgentEvent| sink.lock().unwrap().push(e.clone()))
        .unwrap();
    Harness {
        runtime,
        hanging,
        events,
        ends,
        nested_offers,
    }
}

impl Harness {
    fn registry(&self) -> Arc<dyn AgentRegistry> {
        self.runtime.scope().require::<dyn AgentRegistry>().unwrap()
    }

    async fn parent(&self) -> dsh_agent::AgentHandle {
        self.parent_with(dsh_agent::AgentOverrides::default()).await
    }

    async fn parent_with(&self, options: dsh_agent::AgentOverrides) -> dsh_agent::AgentHandle {
        self.registry()
            .create(
                CreateAgent::new(self.runtime.scope().clone())
                    .with_cwd("/work")
                    .with_options(options),
            )
            .await
            .unwrap()
    }

    /// The tool results of the parent's log, as JSON.
    fn results(&self, events: &[Arc<SessionEvent>]) -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| e.kind.as_str() == "tool/result")
            .map(|e| serde_json::from_str(e.data.get()).unwrap())
            .collect()
    }

    /// A parent's turn on `prompt`, which completes; the parent and its tool results.
    async fn completed(&self, prompt: &str) -> (dsh_agent::AgentHandle, Vec<serde_json::Value>) {
        let parent = self.parent().await;
        let outcome = parent
            .agent()
            .send(UserMessage::user(prompt))
            .unwrap()
            .await;
        assert!(
            matches!(
                outcome,
                TurnOutcome::Ended {
                    reason: TurnEndReason::Completed,
                    ..
                }
            ),
            "{outcome:?}"
        );
        let results = self.results(&parent.agent().session().events());
        (parent, results)
    }

    /// How many child turns of `parent` ended; panics unless each ended before the
    /// parent's own `turn/end`.
    fn child_ends_before(&self, parent: &SessionId) -> usize {
        let ends = self.ends.lock().unwrap().clone();
        let parent_at = ends.iter().position(|(id, _)| id == parent).unwrap();
        let children_at: Vec<usize> = ends
            .iter()
            .enumerate()
            .filter(|(_, (_, up))| up.as_ref() == Some(parent))
            .map(|(at, _)| at)
            .collect();
        assert!(children_at.iter().all(|at| *at < parent_at), "{ends:?}");
        children_at.len()
    }

    /// The sessions the store holds whose header names `parent`.
    fn children_of(&self, parent: &dsh_session::SessionId) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Created { id, .. } => Some(id.clone()),
                _ => None,
            })
            .filter(|id| id != parent)
            .count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_children_run_and_their_answers_come_back_in_order() {
    let h = harness(TaskConfig::default()).await;
    let (parent, results) = h.completed("parent:ok:a,ok:b").await;
    assert_eq!(results.len(), 2);
    for (result, name) in results.iter().zip(["a", "b"]) {
        let said = result["content"].as_str().unwrap();
        assert!(
            said.starts_with(&format!("answer {name}\n\n[subagent ")),
            "{said}"
        );
        assert_eq!(result["is_error"], false);
    }
    // The parent's log says when each child started and how it ended, naming it.
    let records: Vec<dsh_agent::record::SubagentRecord> = parent
        .agent()
        .session()
        .events()
        .iter()
        .filter_map(|e| match dsh_agent::record::Record::decode(e) {
            Ok(dsh_agent::record::Record::Subagent(r)) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), 4, "{records:?}");
    let started = records
        .iter()
        .filter(|r| matches!(r.phase, dsh_agent::record::SubagentPhase::Started { .. }))
        .count();
    assert_eq!(started, 2);
    let finished: Vec<&dsh_agent::record::SubagentRecord> = records
        .iter()
        .filter(|r| matches!(r.phase, dsh_agent::record::SubagentPhase::Finished { .. }))
        .collect();
    assert_eq!(finished.len(), 2);
    for record in finished {
        assert!(
            h.registry().get(&record.child).is_none(),
            "the child is gone once it finished"
        );
        assert!(matches!(
            &record.phase,
            dsh_agent::record::SubagentPhase::Finished { outcome, failed: false, summary: Some(s) }
                if outcome == "completed" && s.starts_with("answer ")
        ));
        assert_eq!((record.turn, record.step), (1, 1));
    }
    parent.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_child_is_a_result_the_parent_reads_never_its_failure() {
    let h = harness(TaskConfig::default()).await;
    let (parent, results) = h.completed("parent:fail:x").await;
    assert_eq!(results[0]["is_error"], true);
    let said = results[0]["content"].as_str().unwrap();
    assert!(said.contains("failed: "), "{said}");
    parent.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_at_the_depth_limit_has_no_task_tool_and_a_nested_call_is_refused() {
    let h = harness(TaskConfig::default()).await;
    let (parent, results) = h.completed("parent:nest:x").await;
    let said = results[0]["content"].as_str().unwrap();
    // The child was not offered `task`; its call was refused as an unknown tool.
    assert!(said.starts_with("nested done"), "{said}");
    assert_eq!(*h.nested_offers.lock().unwrap(), [false]);
    parent.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_parent_cancels_each_running_child_with_cause_parent_first() {
    for children in [0usize, 1, 4] {
        let h = harness(TaskConfig::default()).await;
        let parent = h.parent().await;
        // With no child, the parent itself waits on its model.
        let prompt = match children {
            0 => "hang:parent".to_owned(),
            n => format!(
                "parent:{}",
                (0..n)
                    .map(|i| format!("hang:{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        };
        let ticket = parent.agent().send(UserMessage::user(prompt)).unwrap();
        // Every child (or the childless parent) is waiting on its model.
        h.hanging
            .acquire_many(children.max(1) as u32)
            .await
            .unwrap()
            .forget();
        assert!(parent.agent().cancel(CancelCause::User));
        let outcome = ticket.await;
        assert!(
            matches!(
                outcome,
                TurnOutcome::Ended {
                    reason: TurnEndReason::Aborted {
                        cause: CancelCause::User
                    },
                    ..
                }
            ),
            "{outcome:?}"
        );
        // Every child was cancelled with cause `parent`, and ended before the parent.
        let events = h.events.lock().unwrap().clone();
        let parent_id = parent.agent().id().clone();
        let child_cancels = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::CancelRequested { id, cause: CancelCause::Parent, .. } if *id != parent_id))
            .count();
        assert_eq!(child_cancels, children, "{events:?}");
        assert_eq!(h.children_of(&parent_id), children);
        let results = h.results(&parent.agent().session().events());
        assert_eq!(results.len(), children, "each call has its result");
        // Each child's `turn/end` was appended before the parent's.
        assert_eq!(h.child_ends_before(&parent_id), children);
        parent.dispose().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposing_the_parent_ends_its_running_children_first() {
    let h = harness(TaskConfig::default()).await;
    let parent = h.parent().await;
    let parent_id = parent.agent().id().clone();
    let _ticket = parent
        .agent()
        .send(UserMessage::user("parent:hang:a,hang:b"))
        .unwrap();
    h.hanging.acquire_many(2).await.unwrap().forget();
    parent.dispose().await;
    // Nothing of the family is left, and each child's turn ended before its parent's.
    assert!(h.registry().list().is_empty());
    assert_eq!(h.child_ends_before(&parent_id), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_children_run_at_once_than_allowed_and_the_rest_wait() {
    let h = harness(TaskConfig {
        max_running: 2,
        ..TaskConfig::default()
    })
    .await;
    let parent = h.parent().await;
    let ticket = parent
        .agent()
        .send(UserMessage::user("parent:hang:0,hang:1,hang:2,hang:3"))
        .unwrap();
    h.hanging.acquire_many(2).await.unwrap().forget();
    assert!(parent.agent().cancel(CancelCause::User));
    ticket.await;
    let parent_id = parent.agent().id().clone();
    assert_eq!(h.children_of(&parent_id), 2, "two ran, two waited");
    let results = h.results(&parent.agent().session().events());
    assert_eq!(results.len(), 4);
    let waited = results
        .iter()
        .filter(|r| {
            r["content"]
                .as_str()
                .unwrap()
                .contains("cancelled before the subagent started")
        })
        .count();
    assert_eq!(waited, 2, "{results:?}");
    parent.dispose().await;
}

/// The parent's loop waits for a cancelled `task` body past its usual grace, for as long as
/// the child needs to abort its own stubborn tool: the child's `turn/end` still comes first.
#[tokio::test(start_paused = true)]
async fn a_child_s_stubborn_tool_is_aborted_before_the_parent_s_turn_ends() {
    let h = harness_with(
        TaskConfig::default(),
        LoopConfig {
            tool_cancel_grace: std::time::Duration::from_secs(2),
            ..LoopConfig::default()
        },
    )
    .await;
    let parent = h.parent().await;
    let ticket = parent
        .agent()
        .send(UserMessage::user("parent:stub:x"))
        .unwrap();
    h.hanging.acquire_many(1).await.unwrap().forget();
    assert!(parent.agent().cancel(CancelCause::User));
    ticket.await;
    let parent_id = parent.agent().id().clone();
    assert_eq!(h.child_ends_before(&parent_id), 1);
    let results = h.results(&parent.agent().session().events());
    let said = results[0]["content"].as_str().unwrap();
    assert!(said.contains("cancelled (with its parent)"), "{said}");
    parent.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_s_steps_fit_in_what_its_parent_s_turn_has_left() {
    let h = harness(TaskConfig::default()).await;
    let steps = |n| dsh_agent::AgentOverrides {
        max_steps: std::num::NonZeroU32::new(n),
        ..dsh_agent::AgentOverrides::default()
    };
    // One step: nothing is left to read an answer with, so the task is refused.
    let parent = h.parent_with(steps(1)).await;
    parent
        .agent()
        .send(UserMessage::user("parent:ok:a"))
        .unwrap()
        .await;
    let results = h.results(&parent.agent().session().events());
    let said = results[0]["content"].as_str().unwrap();
    assert!(said.contains("no step left"), "{said}");
    assert_eq!(h.children_of(parent.agent().id()), 0);
    parent.dispose().await;
    // Two steps: the child gets the one left, and stops at it.
    let parent = h.parent_with(steps(2)).await;
    parent
        .agent()
        .send(UserMessage::user("parent:nest:x"))
        .unwrap()
        .await;
    let results = h.results(&parent.agent().session().events());
    let said = results[0]["content"].as_str().unwrap();
    assert!(said.contains("stopped at its step limit"), "{said}");
    parent.dispose().await;
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Whatever its children do (answer, fail or hang), a parent's turn ends after every
    /// child's, each call with its result; hanging children end by the parent's cancel.
    #[test]
    fn every_family_ends_children_first(kinds in proptest::collection::vec(0u8..3, 1..5)) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let h = harness(TaskConfig::default()).await;
            let parent = h.parent().await;
            let parent_id = parent.agent().id().clone();
            let prompts: Vec<String> = kinds
                .iter()
                .enumerate()
                .map(|(i, kind)| match kind {
                    0 => format!("ok:{i}"),
                    1 => format!("hang:{i}"),
                    _ => format!("fail:{i}"),
                })
                .collect();
            let ticket = parent
                .agent()
                .send(UserMessage::user(format!("parent:{}", prompts.join(","))))
                .unwrap();
            let hanging = kinds.iter().filter(|k| **k == 1).count() as u32;
            if hanging > 0 {
                h.hanging.acquire_many(hanging).await.unwrap().forget();
                parent.agent().cancel(CancelCause::User);
            }
            ticket.await;
            let results = h.results(&parent.agent().session().events());
            assert_eq!(results.len(), kinds.len(), "each call has its result");
            // A cancel may come before a sibling of the hanging child started (or before its
            // turn opened): that call's result says so, and it has no turn to end. Every
            // child turn that opened ended before its parent's.
            let ended = h.child_ends_before(&parent_id);
            assert!(ended <= h.children_of(&parent_id));
            if hanging == 0 {
                assert_eq!(ended, kinds.len());
            }
            parent.dispose().await;
            assert!(h.registry().list().is_empty());
        });
    }
}
