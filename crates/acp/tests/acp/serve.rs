//! Building the bridge (missing services and bad settings are refused before any byte is
//! read), and serving one connection in process over in-memory pipes with the real session,
//! persistence, model and agent-loop providers. (The full conformance suite drives the built
//! binary in `tests/`.)

use std::path::PathBuf;
use std::sync::Arc;

use dsh_acp::{AcpBridge, AcpConfig, AcpError, PermissionMode, ShutdownReason};
use dsh_agent::AgentRegistry;
use dsh_kernel::Runtime;
use dsh_session::{SessionStore, SessionStorePlugin};
use dsh_test_support::providers::{
    AgentLoopPlugin, JsonlConfig, JsonlPlugin, LoopConfig, ReplayModel, ReplayPlugin, ReplayScript,
};
use dsh_tools::ToolRegistryPlugin;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

#[tokio::test]
async fn a_scope_without_the_agent_services_is_refused_before_any_byte_is_read() {
    let runtime = Runtime::new();
    match AcpBridge::new(runtime.scope(), AcpConfig::default()) {
        Err(AcpError::MissingService(name)) => assert_eq!(name, "AgentRegistry"),
        other => panic!("{:?}", other.err()),
    }
    let bad = AcpConfig {
        max_line_bytes: 0,
        ..AcpConfig::default()
    };
    assert!(matches!(
        AcpBridge::new(runtime.scope(), bad),
        Err(AcpError::InvalidConfig(_))
    ));
    runtime.shutdown().await;
}

/// The whole stack in process, as the binary composes it but without the shell: persistence
/// in a temp dir, the live store, a scripted model, the tool registry and the agent loop.
struct Stack {
    runtime: Arc<Runtime>,
    _dir: tempfile::TempDir,
    work: PathBuf,
}

async fn stack(entries: Value) -> Stack {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let runtime = Arc::new(Runtime::new());
    runtime
        .load(JsonlPlugin {
            config: JsonlConfig::new(dir.path().join("sessions")),
        })
        .await
        .unwrap();
    runtime.load(SessionStorePlugin).await.unwrap();
    let script = json!({"version": 1, "name": "in-process", "entries": entries});
    let script = ReplayScript::from_json_str(&script.to_string(), "test").unwrap();
    runtime
        .load(ReplayPlugin::new(Arc::new(ReplayModel::new(script))))
        .await
        .unwrap();
    runtime.load(ToolRegistryPlugin).await.unwrap();
    runtime
        .load(AgentLoopPlugin::new(LoopConfig::default()))
        .await
        .unwrap();
    Stack {
        runtime,
        _dir: dir,
        work,
    }
}

/// The client's ends of the two pipes, read line by line.
struct Client {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
}

impl Client {
    async fn send(&mut self, frame: Value) {
        let input = self.input.as_mut().unwrap();
        input
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = self.output.next_line().await.unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the response to `id`, returning it.
    async fn response(&mut self, id: i64) -> Value {
        loop {
            let frame = self.next().await;
            if frame.get("method").is_none() && frame["id"] == id {
                return frame;
            }
        }
    }
}

fn serving(
    stack: &Stack,
    config: AcpConfig,
) -> (
    Client,
    tokio::task::JoinHandle<Result<dsh_acp::ServeReport, AcpError>>,
) {
    let bridge = AcpBridge::new(stack.runtime.scope(), config).unwrap();
    // Two pipes, so that closing the client's input is an end of input the bridge reads
    // while its output stays readable.
    let (client_in, bridge_in) = tokio::io::duplex(1 << 16);
    let (bridge_out, client_out) = tokio::io::duplex(1 << 16);
    let serve = tokio::spawn(bridge.serve(bridge_in, bridge_out, std::future::pending()));
    let client = Client {
        input: Some(client_in),
        output: BufReader::new(client_out).lines(),
    };
    (client, serve)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_input_ends_no_agent_no_live_session_and_no_bridge_task_is_left() {
    let stack = stack(json!([{"stream": [{"text": "hello there"}], "finish": "stop"}])).await;
    let config = AcpConfig {
        permission: PermissionMode::Allow,
        ..AcpConfig::default()
    };
    let (mut client, serve) = serving(&stack, config);
    client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": 1}}))
        .await;
    assert_eq!(client.response(1).await["result"]["protocolVersion"], 1);
    client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                     "params": {"cwd": stack.work, "mcpServers": []}}))
        .await;
    let created = client.response(2).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    client
        .send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                     "params": {"sessionId": session,
                                "prompt": [{"type": "text", "text": "hi"}]}}),
        )
        .await;
    let mut text = String::new();
    let answer = loop {
        let frame = client.next().await;
        if frame["id"] == 3 {
            break frame;
        }
        assert_eq!(frame["params"]["sessionId"], session.as_str());
        text.push_str(
            frame["params"]["update"]["content"]["text"]
                .as_str()
                .unwrap_or(""),
        );
    };
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert_eq!(text, "hello there");
    let registry = stack
        .runtime
        .scope()
        .require::<dyn AgentRegistry>()
        .unwrap();
    let store = stack.runtime.scope().require::<SessionStore>().unwrap();
    assert_eq!(
        registry.list().len(),
        1,
        "the session's agent is registered"
    );

    drop(client.input.take());
    let report = serve.await.unwrap().unwrap();
    assert_eq!(report.reason, ShutdownReason::InputClosed);
    assert_eq!((report.agents_left, report.sessions_left), (0, 0));
    assert!(!report.deadline_hit);
    assert!(registry.list().is_empty());
    assert!(store.list_live().is_empty());
    let bridge_scopes: Vec<String> = stack
        .runtime
        .live_scope_paths()
        .into_iter()
        .filter(|path| path.contains("acp"))
        .collect();
    assert!(bridge_scopes.is_empty(), "{bridge_scopes:?}");
    // The output was closed by the bridge: the client reads its end.
    assert!(client.output.next_line().await.unwrap().is_none());
    stack.runtime.shutdown().await;
}
