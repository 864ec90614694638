//! Building the bridge (missing services and bad settings are refused before any byte is
//! read), and serving one connection in process over in-memory pipes with the real session,
//! persistence, model and agent-loop providers. (The full conformance suite drives the built
//! binary in `tests/`.)

use dsh_acp::{AcpBridge, AcpConfig, AcpError, PermissionMode, ShutdownReason};
use dsh_agent::AgentRegistry;
use dsh_kernel::Runtime;
use dsh_session::SessionStore;
use serde_json::json;

use crate::support::{serving, stack};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_input_ends_no_agent_no_live_session_and_no_bridge_task_is_left() {
    let stack = stack(json!([{"stream": [{"text": "hello there"}], "finish": "stop"}])).await;
    let config = AcpConfig {
        permission: PermissionMode::Allow,
        ..AcpConfig::default()
    };
    let bridge = AcpBridge::new(stack.runtime.scope(), config).unwrap();
    let (mut client, serve) = serving(bridge);
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
