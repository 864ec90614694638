//! The loop's test fixtures: a scripted model with gates, small real tools, a harness that
//! wires the real store (optionally with the JSONL provider in a temp dir), and a validator
//! that checks every log's enclosure and tool pairing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use dsh_agent::{AgentEvent, AgentHandle, AgentRegistry, CreateAgent, UserMessage};
use dsh_agent_loop::{AgentLoopPlugin, LoopConfig};
use dsh_kernel::{Runtime, Scope};
use dsh_llm::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelInfo, ModelRequest,
    ModelStream,
};
use dsh_session::{Interest, PersistenceBridge, SessionEvent, SessionStore};
use dsh_test_providers::providers::{JsonlConfig, JsonlPlugin};
use dsh_tools::{
    Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRegistryPlugin, ToolSchema,
};
use futures::future::BoxFuture;
use tokio::sync::Semaphore;

/// A pause point: the stream (or tool) signals `entered` and waits for `release`.
#[derive(Clone)]
pub struct Gate {
    entered: Arc<Semaphore>,
    release: Arc<Semaphore>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            entered: Arc::new(Semaphore::new(0)),
            release: Arc::new(Semaphore::new(0)),
        }
    }
}

impl Gate {
    pub async fn entered(&self) {
        self.entered.acquire().await.unwrap().forget();
    }
    pub fn release(&self) {
        self.release.add_permits(1);
    }
    /// Signals `entered`, then waits for `release`: for fixtures outside this module.
    pub async fn pass_for_tests(&self) {
        self.pass().await;
    }

    async fn pass(&self) {
        self.entered.add_permits(1);
        self.release.acquire().await.unwrap().forget();
    }
}

/// One item of a scripted reply.
#[derive(Clone)]
pub enum Act {
    Text(&'static str),
    Reasoning(&'static str),
    Call(&'static str, &'static str, &'static str),
    Finish(FinishReason),
    Fail(ModelErrorKind),
    Gate(Gate),
    /// Never yields again and ignores its token.
    Hang,
    /// The provider panics while streaming.
    Panic,
    /// An event exactly as given, contract or not.
    Raw(ModelEvent),
    /// Cancels the token it was given, then reports the cancel: a cancel landing on another
    /// thread between the loop's look at its token and the provider's own.
    CancelThenFail,
}

/// A programmable model: one reply per call, recording every request.
#[derive(Default)]
pub struct ScriptedModel {
    replies: Mutex<VecDeque<Vec<Act>>>,
    pub requests: Mutex<Vec<ModelRequest>>,
    info: Option<ModelInfo>,
}

impl ScriptedModel {
    pub fn new(replies: Vec<Vec<Act>>) -> Arc<ScriptedModel> {
        Arc::new(ScriptedModel {
            replies: Mutex::new(replies.into()),
            requests: Mutex::default(),
            info: Some(ModelInfo {
                provider: "test".into(),
                model: "scripted".into(),
                endpoint: None,
                replay: true,
            }),
        })
    }
    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
    pub fn request(&self, i: usize) -> ModelRequest {
        self.requests.lock().unwrap()[i].clone()
    }
}

/// A plain text answer.
pub fn say(text: &'static str) -> Vec<Act> {
    vec![Act::Text(text), Act::Finish(FinishReason::Stop)]
}

/// An answer that calls one tool.
pub fn call(id: &'static str, name: &'static str, args: &'static str) -> Vec<Act> {
    vec![
        Act::Call(id, name, args),
        Act::Finish(FinishReason::ToolCalls),
    ]
}

impl Model for ScriptedModel {
    fn info(&self) -> &ModelInfo {
        self.info.as_ref().unwrap()
    }

    fn stream(
        &self,
        request: ModelRequest,
        cancel: dsh_llm::CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        request
            .validate()
            .expect("every request the loop sends validates");
        self.requests.lock().unwrap().push(request);
        let acts = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| say("done"));
        Box::pin(async move {
            if let Some(Act::Fail(kind)) = acts.first() {
                return Err(ModelError::new(*kind, "scripted failure"));
            }
            if let Some(Act::CancelThenFail) = acts.first() {
                cancel.cancel();
                return Err(ModelError::cancelled());
            }
            let mut index = 0u32;
            let events = futures::stream::unfold(acts.into_iter(), move |mut acts| async move {
                loop {
                    let act = acts.next()?;
                    let item = match act {
                        Act::Text(t) => Ok(ModelEvent::TextDelta(t.into())),
                        Act::Reasoning(t) => Ok(ModelEvent::ReasoningDelta(t.into())),
                        Act::Call(id, name, args) => {
                            let _ = index;
                            Ok(ModelEvent::ToolCallEnd {
                                index: 0,
                                id: id.into(),
                                name: name.into(),
                                arguments: args.into(),
                            })
                        }
                        Act::Finish(reason) => Ok(ModelEvent::Finish { reason }),
                        Act::Fail(kind) => Err(ModelError::new(kind, "scripted failure")),
                        Act::Gate(gate) => {
                            gate.pass().await;
                            continue;
                        }
                        Act::Hang => {
                            std::future::pending::<()>().await;
                            continue;
                        }
                        Act::Panic => panic!("the scripted provider panicked"),
                        Act::Raw(event) => Ok(event),
                        Act::CancelThenFail => Err(ModelError::cancelled()),
                    };
                    return Some((item, acts));
                }
            });
            index += 1;
            let _ = index;
            Ok(Box::pin(renumber(events)) as ModelStream)
        })
    }
}

/// Gives each tool call its start and argument events with dense indexes, so the stream keeps
/// the contract the loop checks in debug builds.
fn renumber(
    events: impl futures::Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static,
) -> impl futures::Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static {
    use futures::StreamExt;
    let mut next = 0u32;
    events.flat_map(move |item| {
        let out: Vec<Result<ModelEvent, ModelError>> = match item {
            Ok(ModelEvent::ToolCallEnd {
                id,
                name,
                arguments,
                ..
            }) => {
                let index = next;
                next += 1;
                let mut out = vec![Ok(ModelEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                })];
                if !arguments.is_empty() {
                    out.push(Ok(ModelEvent::ToolCallArgumentsDelta {
                        index,
                        fragment: arguments.clone(),
                    }));
                }
                out.push(Ok(ModelEvent::ToolCallEnd {
                    index,
                    id,
                    name,
                    arguments,
                }));
                out
            }
            other => vec![other],
        };
        futures::stream::iter(out)
    })
}

/// Echoes its arguments; optionally parallel-safe, gated, slow or stubborn.
pub struct Probe {
    pub name: &'static str,
    pub parallel: bool,
    pub gate: Option<Gate>,
    /// Ignores cancellation while gated.
    pub stubborn: bool,
    pub approval: bool,
    pub running: Arc<std::sync::atomic::AtomicUsize>,
    pub peak: Arc<std::sync::atomic::AtomicUsize>,
    pub seen: Arc<Mutex<Vec<ToolContext>>>,
}

impl Probe {
    pub fn new(name: &'static str) -> Probe {
        Probe {
            name,
            parallel: false,
            gate: None,
            stubborn: false,
            approval: false,
            running: Arc::default(),
            peak: Arc::default(),
            seen: Arc::default(),
        }
    }
}

impl Tool for Probe {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.name.into(),
            description: "a probe".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn parallel_safe(&self) -> bool {
        self.parallel
    }
    fn effect(&self, _args: &serde_json::Value, _roots: &dsh_tools::Roots) -> dsh_tools::Effect {
        if self.approval {
            dsh_tools::Effect::Execute
        } else {
            dsh_tools::Effect::Read
        }
    }
    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        use std::sync::atomic::Ordering;
        self.seen.lock().unwrap().push(cx.clone());
        let (gate, stubborn) = (self.gate.clone(), self.stubborn);
        let (running, peak) = (self.running.clone(), self.peak.clone());
        Box::pin(async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            if let Some(gate) = gate {
                if stubborn {
                    gate.pass().await;
                } else {
                    tokio::select! {
                        _ = gate.pass() => {}
                        _ = cx.cancellation().cancelled() => {
                            running.fetch_sub(1, Ordering::SeqCst);
                            return Ok(ToolOutput::text("stopped on cancel"));
                        }
                    }
                }
            }
            running.fetch_sub(1, Ordering::SeqCst);
            if args.get("fail").is_some() {
                return Err(ToolError::new("denied", "the probe was told to fail"));
            }
            if args.get("panic").is_some() {
                panic!("the probe was told to panic");
            }
            Ok(ToolOutput::text(args.to_string()))
        })
    }
}

/// The whole loop over real parts: the store, the tool registry, the loop plugin, a scripted
/// model, and optionally the JSONL provider in a temp dir.
pub struct Harness {
    pub runtime: Arc<Runtime>,
    pub store: Arc<SessionStore>,
    pub model: Arc<ScriptedModel>,
    pub events: Arc<Mutex<Vec<AgentEvent>>>,
    pub dir: Option<tempfile::TempDir>,
}

impl Harness {
    pub async fn new(model: Arc<ScriptedModel>) -> Harness {
        Harness::build(model, LoopConfig::default(), false).await
    }

    pub async fn persistent(model: Arc<ScriptedModel>) -> Harness {
        Harness::build(model, LoopConfig::default(), true).await
    }

    pub async fn build(model: Arc<ScriptedModel>, config: LoopConfig, jsonl: bool) -> Harness {
        let runtime = Arc::new(Runtime::new());
        let store = SessionStore::new();
        let dir = if jsonl {
            let dir = tempfile::tempdir().unwrap();
            runtime
                .load(JsonlPlugin {
                    config: JsonlConfig::new(dir.path()),
                })
                .await
                .unwrap();
            store
                .subscribe(
                    runtime.scope(),
                    Interest::All,
                    PersistenceBridge::resolving(runtime.scope().clone()),
                )
                .unwrap();
            Some(dir)
        } else {
            None
        };
        runtime
            .scope()
            .provide::<SessionStore>(store.clone())
            .unwrap();
        runtime
            .scope()
            .provide::<dyn Model>(model.clone() as Arc<dyn Model>)
            .unwrap();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        let events: Arc<Mutex<Vec<AgentEvent>>> = Arc::default();
        let sink = events.clone();
        runtime
            .scope()
            .on(move |e: &AgentEvent| sink.lock().unwrap().push(e.clone()))
            .unwrap();
        let harness = Harness {
            runtime,
            store,
            model,
            events,
            dir,
        };
        harness.load_loop(config).await;
        harness
    }

    pub async fn load_loop(&self, config: LoopConfig) {
        self.runtime
            .load(AgentLoopPlugin::new(config))
            .await
            .unwrap();
    }

    pub fn registry(&self) -> Arc<dyn AgentRegistry> {
        self.runtime.scope().require::<dyn AgentRegistry>().unwrap()
    }

    pub fn tools(&self) -> Arc<dyn ToolRegistry> {
        self.runtime.scope().require::<dyn ToolRegistry>().unwrap()
    }

    pub fn add_tool(&self, tool: impl Tool) {
        self.tools()
            .register(self.runtime.scope(), Arc::new(tool))
            .unwrap();
    }

    pub fn owner(&self) -> Scope {
        self.runtime.scope().clone()
    }

    pub async fn agent(&self) -> AgentHandle {
        self.agent_with(dsh_agent::AgentOverrides::default()).await
    }

    /// An agent in `/work` whose options override the loop's defaults with `overrides`.
    pub async fn agent_with(&self, overrides: dsh_agent::AgentOverrides) -> AgentHandle {
        self.registry()
            .create(
                CreateAgent::new(self.owner())
                    .with_cwd("/work")
                    .with_options(overrides),
            )
            .await
            .unwrap()
    }

    /// How many agent events named `name` were seen.
    pub fn count(&self, name: &str) -> usize {
        self.event_names().iter().filter(|e| *e == name).count()
    }

    pub fn event_names(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(|e| match e {
                AgentEvent::Status { status, .. } => format!("status:{status:?}"),
                other => other.name().to_owned(),
            })
            .collect()
    }
}

/// Overrides that set the step limit alone.
pub fn max_steps(n: u32) -> dsh_agent::AgentOverrides {
    dsh_agent::AgentOverrides {
        max_steps: std::num::NonZeroU32::new(n),
        ..dsh_agent::AgentOverrides::default()
    }
}

pub fn user(text: &str) -> UserMessage {
    UserMessage::user(text)
}

/// The turn ended `completed`.
pub fn completed(turn: u32) -> dsh_agent::TurnOutcome {
    dsh_agent::TurnOutcome::Ended {
        turn,
        reason: dsh_agent::TurnEndReason::Completed,
    }
}

/// The turn ended `aborted` with `cause`.
pub fn aborted(turn: u32, cause: dsh_agent::CancelCause) -> dsh_agent::TurnOutcome {
    dsh_agent::TurnOutcome::Ended {
        turn,
        reason: dsh_agent::TurnEndReason::Aborted { cause },
    }
}

/// The failure code of a turn that ended `error`.
pub fn error_code(outcome: &dsh_agent::TurnOutcome) -> Option<String> {
    match outcome {
        dsh_agent::TurnOutcome::Ended {
            reason: dsh_agent::TurnEndReason::Error { failure },
            ..
        } => Some(failure.code.clone()),
        _ => None,
    }
}

/// A session id from test text.
pub fn id(text: &str) -> dsh_session::SessionId {
    dsh_session::SessionId::parse(text).unwrap()
}

/// The one JSONL log stored under `root` (one project directory, one session).
pub fn stored_log(root: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        // Not the hidden listing index beside the logs.
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a stored log")
}

/// The `tool/result` payloads of a log, in order.
pub fn results(events: &[Arc<SessionEvent>]) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e.kind.as_str() == "tool/result")
        .map(|e| data(e))
        .collect()
}

/// The texts of the user messages at the end of a request, oldest first.
pub fn last_user_texts(request: &ModelRequest, n: usize) -> Vec<String> {
    let mut texts: Vec<String> = request
        .messages
        .iter()
        .rev()
        .take(n)
        .filter_map(|m| match m {
            dsh_llm::Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect();
    texts.reverse();
    texts
}

/// The event types of a log, in order.
pub fn kinds(events: &[Arc<SessionEvent>]) -> Vec<String> {
    events.iter().map(|e| e.kind.as_str().to_owned()).collect()
}

pub fn data(event: &SessionEvent) -> serde_json::Value {
    serde_json::from_str(event.data.get()).unwrap()
}

/// Enclosure, nesting and tool pairing: every turn and step closed once, every tool call of a
/// step answered once before its `step/end`, no tool call in an interrupted message.
pub fn validate_log(events: &[Arc<SessionEvent>]) {
    let mut turn: Option<u64> = None;
    let mut step = false;
    let mut owed: Vec<String> = Vec::new();
    for event in events {
        let d = data(event);
        match event.kind.as_str() {
            "turn/start" => {
                assert!(
                    turn.is_none(),
                    "turn/start inside a turn at seq {}",
                    event.seq
                );
                turn = d["turn"].as_u64();
            }
            "turn/end" => {
                assert_eq!(turn, d["turn"].as_u64(), "turn/end matches its turn/start");
                assert!(!step, "turn/end inside a step at seq {}", event.seq);
                turn = None;
            }
            "step/start" => {
                assert!(turn.is_some() && !step, "step/start at seq {}", event.seq);
                step = true;
            }
            "step/end" => {
                assert!(step, "step/end without a step at seq {}", event.seq);
                assert!(
                    owed.is_empty(),
                    "unanswered calls {owed:?} at seq {}",
                    event.seq
                );
                step = false;
            }
            "assistant/message" => {
                assert!(step);
                let calls = d["message"]["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if d["interrupted"] == serde_json::json!(true) {
                    assert!(
                        calls.is_empty(),
                        "an interrupted message holds no tool calls"
                    );
                }
                owed.extend(calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()));
            }
            "tool/result" => {
                let id = d["call_id"].as_str().unwrap();
                let at = owed.iter().position(|o| o == id);
                assert_eq!(at, Some(0), "result {id} answers the next owed call");
                owed.remove(0);
            }
            "user/message" | "assistant/chunk" | "tool/call" => {
                assert!(
                    step,
                    "{} outside a step at seq {}",
                    event.kind.as_str(),
                    event.seq
                )
            }
            _ => {}
        }
    }
    assert!(turn.is_none(), "the log ends inside a turn");
}
