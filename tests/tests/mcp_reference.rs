//! The MCP provider (`dsh-mcp-rmcp`) against the official reference server
//! (`@modelcontextprotocol/server-everything`, pinned in `tests/mcp-servers`), over stdio
//! and over streamable HTTP on 127.0.0.1: its tools with their schemas and hints, calls,
//! an unknown tool, a cancelled call, and shutdown leaving no process behind.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use dsh_e2e::{ReferenceHttp, mcp_reference_server, wait_gone};
use dsh_mcp::{CancellationToken, McpConnector, McpError, McpServer, ServerSpec};
use dsh_mcp_rmcp::RmcpConnector;
use serde_json::json;

async fn exercise(server: &dyn McpServer) {
    let tools = server.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get-sum"),
        "{names:?}"
    );
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert!(echo.description.is_some());

    let echoed = server
        .call(
            "echo",
            json!({"message": "hi there"}),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!echoed.is_error);
    assert!(echoed.text.contains("hi there"), "{echoed:?}");
    let sum = server
        .call("get-sum", json!({"a": 2, "b": 3}), CancellationToken::new())
        .await
        .unwrap();
    assert!(sum.text.contains('5'), "{sum:?}");
    let image = server
        .call("get-tiny-image", json!({}), CancellationToken::new())
        .await
        .unwrap();
    assert!(image.text.contains("an image (image/png)"), "{image:?}");

    let unknown = server
        .call("no-such-tool", json!({}), CancellationToken::new())
        .await;
    match unknown {
        Err(McpError::Server { server, .. }) => assert_eq!(server, "everything"),
        Ok(outcome) => assert!(outcome.is_error, "{outcome:?}"),
        Err(other) => panic!("{other}"),
    }
    let cancel = CancellationToken::new();
    let long = server.call(
        "trigger-long-running-operation",
        json!({"duration": 30, "steps": 5}),
        cancel.clone(),
    );
    cancel.cancel();
    assert!(matches!(long.await, Err(McpError::Cancelled { .. })));
    // The connection is still usable after the cancel.
    let again = server
        .call(
            "echo",
            json!({"message": "still here"}),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(again.text.contains("still here"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_stdio() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let mut spec = ServerSpec::stdio("everything", "node", [script.display().to_string()]);
    spec.tool_timeout = Duration::from_secs(20);
    let server = RmcpConnector::default().connect(&spec).await.unwrap();
    assert_eq!(server.name(), "everything");
    exercise(&*server).await;
    server.shutdown().await;
    let after = server
        .call("echo", json!({"message": "x"}), CancellationToken::new())
        .await;
    assert!(matches!(after, Err(McpError::Gone { .. })), "{after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_over_streamable_http() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let mut http = tokio::task::spawn_blocking(move || ReferenceHttp::start(&script))
        .await
        .unwrap();
    let spec = ServerSpec::http("everything", http.url.clone());
    let server = RmcpConnector::default().connect(&spec).await.unwrap();
    exercise(&*server).await;
    // A server that went away fails the call as gone, so the consumer starts it again.
    http.stop();
    let after = server
        .call("echo", json!({"message": "x"}), CancellationToken::new())
        .await;
    assert!(matches!(after, Err(McpError::Gone { .. })), "{after:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_or_answer_is_a_clear_error() {
    let missing = ServerSpec::stdio("ghost", "/nonexistent/mcp-server", Vec::<String>::new());
    let err = RmcpConnector::default()
        .connect(&missing)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, McpError::Start { server, .. } if server == "ghost"),
        "{err}"
    );
    assert!(err.to_string().contains("/nonexistent/mcp-server"), "{err}");

    // A program that never speaks MCP (and starts a child of its own): the startup timeout
    // ends it, and its whole process group with it.
    let marker = format!("DSH_MCP_TEST=silent-{}", std::process::id());
    let mut silent = ServerSpec::stdio("silent", "sh", ["-c", "sleep 30 & sleep 30"]);
    if let dsh_mcp::Transport::Stdio { env, .. } = &mut silent.transport {
        let (name, value) = marker.split_once('=').unwrap();
        env.push((name.into(), value.into()));
    }
    silent.startup_timeout = Duration::from_millis(300);
    let err = RmcpConnector::default()
        .connect(&silent)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");
    tokio::task::spawn_blocking(move || wait_gone(&marker))
        .await
        .unwrap();

    let refused = ServerSpec::http("nowhere", "http://127.0.0.1:9/mcp");
    let err = RmcpConnector::default()
        .connect(&refused)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, McpError::Start { .. }), "{err}");
}
