//! MCP servers that behave badly on purpose, against the built binary: tools whose name or
//! schema would cost every model request, a stderr flood without a newline, and a server that
//! starts a daemon in a session of its own. Nothing a server sends costs a request more than
//! its bound, and nothing it starts outlives dsh, even after a SIGKILL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, text, wait_gone};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

const FAULT_SERVER: &str = env!("CARGO_BIN_EXE_mcp-fault-server");

/// A configuration with the fault server as `faults`, run through bash with `prefix` first
/// (a daemon to start, say), carrying `marker` in its environment.
fn config(sandbox: &Sandbox, args: &str, prefix: &str, marker: &str) -> std::path::PathBuf {
    let (var, value) = marker.split_once('=').unwrap();
    let path = sandbox.root.path().join("config.toml");
    let command = format!("{prefix} exec {FAULT_SERVER} {args}");
    std::fs::write(
        &path,
        format!(
            "[mcp_servers.faults]\ncommand = \"bash\"\nargs = [\"-c\", {command:?}]\n\
             env = {{ {var} = {value:?} }}\n"
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_tools_and_a_stderr_flood_cost_a_request_only_their_bounds() {
    let sandbox = Sandbox::new();
    let marker = format!("DSH_MCP_HOSTILE={}", dsh_test_support::processes::marker());
    let path = config(
        &sandbox,
        "--hostile-tools --stderr-flood 33554432",
        "",
        &marker,
    );
    let server = MockModelServer::start(vec![MockResponse::text("done")]).await;
    let base = server.base_url();
    let out = tokio::task::spawn_blocking({
        let mut command = sandbox.run_against(&base, &["go"]);
        command
            .env("DSH_CONFIG", &path)
            .env("DSH_LOG", "dsh::mcp=info");
        move || command.output().unwrap()
    })
    .await
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        &stderr[..stderr.len().min(4000)]
    );
    let request = server.requests()[0].json();
    let tools = request["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"faults__echo"), "{names:?}");
    assert!(
        !names.contains(&"faults__wide-schema"),
        "a schema over the bound is not offered: {names:?}"
    );
    let sent = serde_json::to_string(&request["tools"]).unwrap().len();
    assert!(
        sent < 32 * 1024,
        "the tools cost {sent} bytes of every request"
    );
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:") && l.contains("wide-schema"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", &stderr[..stderr.len().min(4000)]);
    assert!(warned[0].contains("64 KiB"), "{}", warned[0]);
    // The 1 MiB name is cut wherever it is quoted.
    assert!(
        stderr.len() < 1 << 20,
        "{} bytes of stderr: a flood or a name got through",
        stderr.len()
    );
    assert!(
        stderr.contains("more bytes of this line not kept"),
        "the flood's line is logged cut"
    );
    wait_gone(&marker);
}

#[test]
fn what_a_server_starts_in_a_session_of_its_own_ends_with_the_run() {
    let sandbox = Sandbox::new();
    let marker = format!("DSH_MCP_ESCAPE={}", dsh_test_support::processes::marker());
    let path = config(&sandbox, "", "setsid sleep 1000 & ", &marker);
    let script = sandbox.script(
        "escape",
        json!([
            {"stream": [{"tool_call": {"name": "faults__echo", "arguments": {"text": "up"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh(["--replay", &script, "run", "go"])
        .env("DSH_CONFIG", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The daemon, in a session of its own, carried the server's marker: it is gone too.
    wait_gone(&marker);
}

#[test]
fn after_a_sigkill_of_dsh_the_watchdog_ends_a_server_and_its_daemon() {
    let sandbox = Sandbox::new();
    let marker = format!("DSH_MCP_KILLED={}", dsh_test_support::processes::marker());
    let path = config(&sandbox, "", "setsid sleep 1000 & ", &marker);
    let script = sandbox.script("idle", json!([]));
    let mut command = sandbox.dsh(["--replay", &script, "acp"]);
    command.env("DSH_CONFIG", &path);
    let mut acp = AcpDriver::spawn(command);
    acp.initialize(false);
    // A session is created once the configured servers started.
    acp.new_session(&sandbox.work());
    assert!(
        dsh_e2e::marked_processes(&marker).len() >= 2,
        "the server and its daemon run"
    );
    acp.signal("KILL");
    wait_gone(&marker);
}
