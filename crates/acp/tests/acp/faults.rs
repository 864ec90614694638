//! The bridge when what it relies on fails: an agent factory that errors, panics, or is
//! still working when teardown begins; an agent that panics taking a prompt; a stored log
//! that cannot be read. Each costs its own request one JSON-RPC error, installs nothing, and
//! leaves the connection serving.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_acp::{AcpBridge, AcpConfig, PermissionMode, ShutdownReason};
use dsh_agent::{
    Agent, AgentError, AgentFactory, AgentHandle, AgentOptions, AgentRegistry, AgentStatus,
    CreateAgent, ResumeAgent, TurnTicket, UserMessage,
};
use dsh_session::{CancelCause, Session, SessionId, SessionPersistence, SessionStore};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

use crate::support::{Stack, serving, stack};

/// What the next `create` or `resume` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Passes through.
    None,
    /// Says it entered, then waits for a permit before passing through.
    Gate,
    /// Fails with an agent error.
    Fail,
    /// Panics.
    Panic,
    /// Passes through, but the agent panics when sent a prompt.
    PanicOnSend,
}

/// The real registry behind a switch of faults; agents it hands out report their cancels.
struct Faulty {
    inner: Arc<dyn AgentRegistry>,
    fault: Mutex<Fault>,
    entered: mpsc::UnboundedSender<()>,
    permits: Arc<Semaphore>,
    cancels: mpsc::UnboundedSender<SessionId>,
}

impl Faulty {
    async fn pass<F>(&self, through: F) -> Result<AgentHandle, AgentError>
    where
        F: Future<Output = Result<AgentHandle, AgentError>>,
    {
        let fault = *self.fault.lock();
        match fault {
            Fault::Fail => return Err(AgentError::ShuttingDown),
            Fault::Panic => panic!("a factory bug"),
            Fault::Gate => {
                let _ = self.entered.send(());
                let _permit = self.permits.acquire().await.unwrap();
            }
            Fault::None | Fault::PanicOnSend => {}
        }
        let handle = through.await?;
        let spy = Spy {
            inner: handle.agent().clone(),
            cancels: self.cancels.clone(),
            panic_on_send: fault == Fault::PanicOnSend,
        };
        Ok(AgentHandle::new(Arc::new(spy), handle.teardown().clone()))
    }
}

#[async_trait]
impl AgentFactory for Faulty {
    async fn create(&self, request: CreateAgent) -> Result<AgentHandle, AgentError> {
        self.pass(self.inner.create(request)).await
    }

    async fn resume(&self, request: ResumeAgent) -> Result<AgentHandle, AgentError> {
        self.pass(self.inner.resume(request)).await
    }
}

impl AgentRegistry for Faulty {
    fn get(&self, id: &SessionId) -> Option<Arc<dyn Agent>> {
        self.inner.get(id)
    }

    fn list(&self) -> Vec<Arc<dyn Agent>> {
        self.inner.list()
    }
}

/// The real agent, reporting each cancel, optionally panicking on `send`.
struct Spy {
    inner: Arc<dyn Agent>,
    cancels: mpsc::UnboundedSender<SessionId>,
    panic_on_send: bool,
}

impl Agent for Spy {
    fn id(&self) -> &SessionId {
        self.inner.id()
    }
    fn session(&self) -> &Session {
        self.inner.session()
    }
    fn options(&self) -> &AgentOptions {
        self.inner.options()
    }
    fn status(&self) -> AgentStatus {
        self.inner.status()
    }
    fn send(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        assert!(!self.panic_on_send, "an agent bug");
        self.inner.send(message)
    }
    fn steer(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        self.inner.steer(message)
    }
    fn inject(&self, message: UserMessage) -> Result<TurnTicket, AgentError> {
        self.inner.inject(message)
    }
    fn compact(&self, id: dsh_agent::MessageId) -> Result<TurnTicket, AgentError> {
        self.inner.compact(id)
    }
    fn config(&self) -> dsh_agent::SessionConfig {
        self.inner.config()
    }
    fn configure(
        &self,
        change: dsh_agent::ConfigChange,
        origin: dsh_agent::ConfigOrigin,
    ) -> Result<dsh_agent::SessionConfig, AgentError> {
        self.inner.configure(change, origin)
    }
    fn cancel(&self, cause: CancelCause) -> bool {
        let _ = self.cancels.send(self.inner.id().clone());
        self.inner.cancel(cause)
    }
    fn when_idle(&self) -> BoxFuture<'static, ()> {
        self.inner.when_idle()
    }
}

struct Rig {
    stack: Stack,
    faulty: Arc<Faulty>,
    entered: mpsc::UnboundedReceiver<()>,
    cancels: mpsc::UnboundedReceiver<SessionId>,
}

async fn rig() -> Rig {
    let stack = stack(json!([{"stream": [{"text": "fine"}], "finish": "stop"}])).await;
    let (entered_tx, entered) = mpsc::unbounded_channel();
    let (cancels_tx, cancels) = mpsc::unbounded_channel();
    let faulty = Arc::new(Faulty {
        inner: stack
            .runtime
            .scope()
            .require::<dyn AgentRegistry>()
            .unwrap(),
        fault: Mutex::new(Fault::None),
        entered: entered_tx,
        permits: Arc::new(Semaphore::new(0)),
        cancels: cancels_tx,
    });
    Rig {
        stack,
        faulty,
        entered,
        cancels,
    }
}

impl Rig {
    fn bridge(&self) -> AcpBridge {
        let config = AcpConfig {
            permission: PermissionMode::Allow,
            ..AcpConfig::default()
        };
        AcpBridge::new(self.stack.runtime.scope(), config)
            .unwrap()
            .with_registry(self.faulty.clone())
    }

    fn fault(&self, fault: Fault) {
        *self.faulty.fault.lock() = fault;
    }

    /// A session stored on disk with one answered turn, and no agent left.
    async fn stored_session(&self) -> String {
        let registry = &self.faulty.inner;
        let handle = registry
            .create(CreateAgent::new(self.stack.runtime.scope().clone()).with_cwd(&self.stack.work))
            .await
            .unwrap();
        let ticket = handle.agent().send(UserMessage::user("earlier")).unwrap();
        ticket.outcome().await;
        let id = handle.agent().id().as_str().to_owned();
        handle.dispose().await;
        id
    }

    fn new_params(&self) -> Value {
        json!({"cwd": self.stack.work, "mcpServers": []})
    }

    fn load_params(&self, id: &str) -> Value {
        json!({"sessionId": id, "cwd": self.stack.work, "mcpServers": []})
    }
}

fn error_code(frame: &Value) -> i64 {
    frame["error"]["code"].as_i64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setups_in_flight_when_teardown_begins_dispose_what_they_made_and_answer_shutting_down() {
    let mut rig = rig().await;
    let stored = rig.stored_session().await;
    let (mut client, serve) = serving(rig.bridge());
    client.initialize().await;
    client.request(1, "session/new", rig.new_params()).await;
    let live = client.response(1).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    rig.fault(Fault::Gate);
    client.request(2, "session/new", rig.new_params()).await;
    client
        .request(3, "session/load", rig.load_params(&stored))
        .await;
    rig.entered.recv().await.unwrap();
    rig.entered.recv().await.unwrap();
    // Both setups wait inside the factory. End the input; teardown's first step cancels the
    // live session's agent, after it has closed the connection to new sessions.
    drop(client.input.take());
    assert_eq!(rig.cancels.recv().await.unwrap().as_str(), live);
    rig.faulty.permits.add_permits(2);

    let report = serve.await.unwrap().unwrap();
    assert_eq!(report.reason, ShutdownReason::InputClosed);
    assert_eq!((report.agents_left, report.sessions_left), (0, 0));
    assert!(!report.deadline_hit);
    let frames = client.rest().await;
    for id in [2, 3] {
        let answers: Vec<&Value> = frames.iter().filter(|f| f["id"] == id).collect();
        assert_eq!(answers.len(), 1, "{frames:?}");
        assert_eq!(error_code(answers[0]), -32603, "{frames:?}");
        assert_eq!(answers[0]["error"]["message"], "dsh is shutting down");
    }
    let store = rig.stack.runtime.scope().require::<SessionStore>().unwrap();
    assert!(rig.faulty.inner.list().is_empty());
    assert!(store.list_live().is_empty());
    rig.stack.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_factory_answers_its_request_and_installs_nothing() {
    let rig = rig().await;
    let stored = rig.stored_session().await;
    let (mut client, serve) = serving(rig.bridge());
    client.initialize().await;
    let mut id = 1;
    for fault in [Fault::Fail, Fault::Panic] {
        rig.fault(fault);
        client.request(id, "session/new", rig.new_params()).await;
        let answer = client.response(id).await;
        assert_eq!(error_code(&answer), -32603, "{fault:?}: {answer}");
        id += 1;
        client
            .request(id, "session/load", rig.load_params(&stored))
            .await;
        let answer = client.response(id).await;
        assert_eq!(error_code(&answer), -32603, "{fault:?}: {answer}");
        id += 1;
        client
            .request(
                id,
                "session/prompt",
                json!({"sessionId": stored, "prompt": [{"type": "text", "text": "x"}]}),
            )
            .await;
        assert_eq!(
            error_code(&client.response(id).await),
            -32002,
            "{fault:?}: nothing was installed"
        );
        id += 1;
        assert!(rig.faulty.inner.list().is_empty(), "{fault:?}");
    }
    // The failed loads released their reservation: the same session loads now.
    rig.fault(Fault::None);
    client
        .request(id, "session/load", rig.load_params(&stored))
        .await;
    assert!(client.response(id).await["result"]["configOptions"].is_array());
    drop(client.input.take());
    let report = serve.await.unwrap().unwrap();
    assert_eq!((report.agents_left, report.sessions_left), (0, 0));
    rig.stack.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_panics_taking_a_prompt_fails_that_prompt_and_leaves_the_session_free() {
    let rig = rig().await;
    let (mut client, serve) = serving(rig.bridge());
    client.initialize().await;
    rig.fault(Fault::PanicOnSend);
    client.request(1, "session/new", rig.new_params()).await;
    let session = client.response(1).await["result"]["sessionId"].clone();
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "x"}]});
    for id in [2, 3] {
        client.request(id, "session/prompt", prompt.clone()).await;
        let answer = client.response(id).await;
        assert_eq!(
            error_code(&answer),
            -32603,
            "an internal error, not a busy session: {answer}"
        );
    }
    client.initialize().await;
    drop(client.input.take());
    let report = serve.await.unwrap().unwrap();
    assert_eq!((report.agents_left, report.sessions_left), (0, 0));
    rig.stack.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_log_that_cannot_be_read_is_an_internal_error_naming_the_session() {
    let rig = rig().await;
    let stored = rig.stored_session().await;
    let persistence = rig
        .stack
        .runtime
        .scope()
        .require::<dyn SessionPersistence>()
        .unwrap();
    let location = persistence
        .locate(&SessionId::parse(&stored).unwrap())
        .await
        .unwrap()
        .unwrap();
    let log = location.path.unwrap();
    let kept = std::fs::read(&log).unwrap();
    std::fs::write(&log, b"\x00\xffnot a session log\n").unwrap();
    let (mut client, serve) = serving(rig.bridge());
    client.initialize().await;
    client
        .request(1, "session/load", rig.load_params(&stored))
        .await;
    let answer = client.response(1).await;
    assert_eq!(error_code(&answer), -32603, "{answer}");
    assert_eq!(answer["error"]["data"]["sessionId"], stored.as_str());
    assert!(rig.faulty.inner.list().is_empty());
    // The refused load wrote nothing: with the log restored, it loads.
    std::fs::write(&log, &kept).unwrap();
    client
        .request(2, "session/load", rig.load_params(&stored))
        .await;
    assert!(client.response(2).await["result"]["configOptions"].is_array());
    drop(client.input.take());
    serve.await.unwrap().unwrap();
    rig.stack.runtime.shutdown().await;
}
