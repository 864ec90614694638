//! The MCP provider (`dsh-mcp-rmcp`) against a server that misbehaves on purpose (the
//! in-repo fault server on rmcp's server side): one that never finishes starting, one that
//! crashes mid-call, one that hangs a call until MCP's cancellation reaches it, one that
//! answers 10 MiB, and one whose tool list changes; and, through the consumer's tools
//! (`dsh-tool-mcp`), calls that find a crashed server gone together.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use dsh_e2e::gone;
use dsh_e2e::mcp_fault::{FaultReports, REPORT_VAR};
use dsh_mcp::{CancellationToken, McpConnector, McpError, McpServer, ServerSpec, Transport};
use dsh_mcp_rmcp::RmcpConnector;
use serde_json::json;

const FAULT_SERVER: &str = env!("CARGO_BIN_EXE_mcp-fault-server");

/// The fault server as `name`, reporting to `reports` and marked with `marker`.
fn spec(name: &str, reports: &FaultReports, marker: &str, args: &[&str]) -> ServerSpec {
    let (key, value) = marker.split_once('=').unwrap();
    ServerSpec {
        transport: Transport::Stdio {
            command: FAULT_SERVER.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: vec![
                (REPORT_VAR.into(), reports.path().display().to_string()),
                (key.into(), value.into()),
            ],
            cwd: None,
        },
        ..ServerSpec::stdio(name, "", Vec::<String>::new())
    }
}

fn marker(test: &str) -> String {
    format!("DSH_MCP_FAULT={test}-{}", std::process::id())
}

async fn connect(spec: &ServerSpec) -> std::sync::Arc<dyn McpServer> {
    RmcpConnector::default().connect(spec).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_finishes_starting_times_out_and_is_ended() {
    let mut reports = FaultReports::new();
    let marker = marker("never");
    let mut spec = spec("stuck", &reports, &marker, &["--never-start"]);
    // The timeout is the behaviour under test.
    spec.startup_timeout = Duration::from_millis(300);
    let failed = RmcpConnector::default().connect(&spec).await.err().unwrap();
    assert!(
        matches!(&failed, McpError::Timeout { server, operation, .. }
            if server == "stuck" && operation == "starting"),
        "{failed}"
    );
    assert!(failed.to_string().contains("stuck"), "{failed}");
    reports.wait_for("started").await;
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_fails_the_call_as_gone_instead_of_hanging() {
    let mut reports = FaultReports::new();
    let marker = marker("crash");
    let server = connect(&spec("faults", &reports, &marker, &[])).await;
    let pid = reports.wait_for("started").await;
    let crashed = server
        .call("crash", json!({}), CancellationToken::new())
        .await;
    assert_eq!(reports.wait_for("crash").await, pid);
    match crashed {
        Err(McpError::Gone { server, .. }) => assert_eq!(server, "faults"),
        other => panic!("a crash is gone, not {other:?}"),
    }
    let after = server.tools().await;
    assert!(matches!(after, Err(McpError::Gone { .. })), "{after:?}");
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_sends_mcp_s_cancellation_and_the_server_stays_usable() {
    let mut reports = FaultReports::new();
    let marker = marker("hang");
    let server = connect(&spec("faults", &reports, &marker, &[])).await;
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let (server, cancel) = (server.clone(), cancel.clone());
        async move { server.call("hang", json!({}), cancel).await }
    });
    reports.wait_for("hang").await;
    cancel.cancel();
    // The server heard the cancellation: its handler's token fired.
    reports.wait_for("cancelled").await;
    let ended = call.await.unwrap();
    assert!(
        matches!(ended, Err(McpError::Cancelled { .. })),
        "{ended:?}"
    );
    let echoed = server
        .call(
            "echo",
            json!({"text": "still here"}),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(echoed.text, "still here");
    server.shutdown().await;
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_mebibytes_arrive_whole_through_the_provider() {
    let reports = FaultReports::new();
    let marker = marker("huge");
    let server = connect(&spec("faults", &reports, &marker, &[])).await;
    let huge = server
        .call("huge", json!({}), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(huge.text.len(), 10 << 20);
    assert!(!huge.is_error);
    server.shutdown().await;
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_announced_and_listed() {
    let reports = FaultReports::new();
    let marker = marker("grow");
    let server = connect(&spec("faults", &reports, &marker, &[])).await;
    let names = |tools: Vec<dsh_mcp::McpTool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name).collect()
    };
    let before = names(server.tools().await.unwrap());
    assert!(!before.contains(&"grown".to_owned()), "{before:?}");
    let mut changed = server.tools_changed();
    let grow = tokio::spawn({
        let server = server.clone();
        async move {
            server
                .call("grow", json!({}), CancellationToken::new())
                .await
        }
    });
    changed.changed().await.unwrap();
    let after = names(server.tools().await.unwrap());
    assert!(after.contains(&"grown".to_owned()), "{after:?}");
    assert_eq!(grow.await.unwrap().unwrap().text, "added grown");
    // The malformed schema is the consumer's to refuse: the provider passes it on as sent.
    let bad = server
        .tools()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "bad-schema")
        .unwrap();
    assert_eq!(bad.input_schema, json!({"type": "array"}));
    server.shutdown().await;
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_tool_timeout_fails_and_the_server_hears_the_cancellation() {
    let mut reports = FaultReports::new();
    let marker = marker("timeout");
    let mut spec = spec("faults", &reports, &marker, &[]);
    // The limit is the behaviour under test.
    spec.tool_timeout = Duration::from_millis(200);
    let server = connect(&spec).await;
    let ended = server
        .call("hang", json!({}), CancellationToken::new())
        .await;
    match &ended {
        Err(McpError::Timeout {
            server, operation, ..
        }) => {
            assert_eq!(server, "faults");
            assert_eq!(operation, "calling hang");
        }
        other => panic!("a timeout, not {other:?}"),
    }
    assert!(ended.unwrap_err().to_string().contains("took longer than"));
    reports.wait_for("cancelled").await;
    server.shutdown().await;
    gone(marker).await;
}

/// Calls the registered tool `name` as the agent loop would.
async fn call_tool(
    registry: &std::sync::Arc<dyn dsh_tools::ToolRegistry>,
    name: &str,
    args: serde_json::Value,
) -> Result<dsh_tools::ToolOutput, dsh_tools::ToolError> {
    let tools = registry.snapshot();
    let tool = tools.get(name).unwrap().clone();
    tool.call(
        args,
        dsh_tools::ToolContext::new(name, CancellationToken::new()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_find_a_crashed_server_together_share_its_one_restart() {
    let mut reports = FaultReports::new();
    let marker = marker("together");
    let runtime = dsh_kernel::Runtime::new();
    let registry: std::sync::Arc<dyn dsh_tools::ToolRegistry> =
        std::sync::Arc::new(dsh_tools::StandardToolRegistry::new());
    let connector: std::sync::Arc<dyn McpConnector> = std::sync::Arc::new(RmcpConnector::default());
    let notes = dsh_tool_mcp::start_servers(
        runtime.scope(),
        &registry,
        &connector,
        vec![spec("faults", &reports, &marker, &[])],
    )
    .await
    .unwrap();
    assert_eq!(notes.len(), 1, "the array schema: {notes:?}");
    reports.wait_for("started").await;
    let crashed = call_tool(&registry, "faults__crash", json!({})).await;
    assert_eq!(crashed.unwrap_err().code, "mcp_server_gone");
    // Two calls find the server gone at once: one starts it, the other waits for that start
    // instead of calling it a second crash.
    let (one, two) = tokio::join!(
        call_tool(&registry, "faults__echo", json!({"text": "one"})),
        call_tool(&registry, "faults__echo", json!({"text": "two"})),
    );
    assert_eq!(one.unwrap().content, "one");
    assert_eq!(two.unwrap().content, "two");
    reports.wait_for("started").await;
    runtime.shutdown().await;
    gone(marker).await;
    assert!(
        !reports.so_far().iter().any(|r| r.starts_with("started")),
        "started once more, not twice"
    );
}
