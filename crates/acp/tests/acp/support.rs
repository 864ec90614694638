//! The in-process rig: the real providers in a temp dir, and a client over two in-memory
//! pipes.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_acp::{AcpBridge, AcpError, ServeReport};
use dsh_kernel::Runtime;
use dsh_session::SessionStorePlugin;
use dsh_test_providers::providers::{
    AgentLoopPlugin, JsonlConfig, JsonlPlugin, LoopConfig, ReplayModel, ReplayPlugin, ReplayScript,
};
use dsh_tools::ToolRegistryPlugin;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// The whole stack in process, as the binary composes it but without the shell: persistence
/// in a temp dir, the live store, a scripted model, the tool registry and the agent loop.
pub struct Stack {
    pub runtime: Arc<Runtime>,
    pub _dir: tempfile::TempDir,
    pub work: PathBuf,
}

pub async fn stack(entries: Value) -> Stack {
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
pub struct Client {
    pub input: Option<DuplexStream>,
    pub output: Lines<BufReader<DuplexStream>>,
}

impl Client {
    pub async fn send(&mut self, frame: Value) {
        let input = self.input.as_mut().unwrap();
        input
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .unwrap();
    }

    pub async fn next(&mut self) -> Value {
        let line = self.output.next_line().await.unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Reads until the response to `id`, returning it.
    pub async fn response(&mut self, id: i64) -> Value {
        loop {
            let frame = self.next().await;
            if frame.get("method").is_none() && frame["id"] == id {
                return frame;
            }
        }
    }
}

/// Serves `bridge` on a task; returns the client's ends and the task.
pub fn serving(bridge: AcpBridge) -> (Client, JoinHandle<Result<ServeReport, AcpError>>) {
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

impl Client {
    /// Sends a request.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// `initialize`, answered.
    pub async fn initialize(&mut self) {
        self.request(0, "initialize", json!({"protocolVersion": 1}))
            .await;
        assert_eq!(self.response(0).await["result"]["protocolVersion"], 1);
    }

    /// Every frame left, up to the end of the output.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut frames = Vec::new();
        while let Some(line) = self.output.next_line().await.unwrap() {
            frames.push(serde_json::from_str(&line).unwrap());
        }
        frames
    }
}
