//! MCP budgets against the official reference server (`tests/mcp-servers`): a stdio server's
//! spawn until its tools are listed; a `tools/call` through dsh's provider against the same
//! call written directly on the server's stdio in the same run; and `session/new` over ACP
//! with a server that cannot start. Run with `cargo bench -p dsh-e2e --bench mcp`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, mcp_reference_server, percentiles};
use dsh_mcp::{CancellationToken, McpConnector, ServerSpec};
use dsh_mcp_rmcp::RmcpConnector;
use serde_json::{Value, json};

/// The reference server driven by hand: one JSON-RPC line out, one line back.
struct Direct {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    next: u64,
}

impl Direct {
    fn start(script: &std::path::Path) -> Direct {
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut direct = Direct {
            child,
            stdin,
            lines,
            next: 1,
        };
        direct.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        direct.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        direct
    }

    fn send(&mut self, frame: &Value) {
        writeln!(self.stdin, "{frame}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line: Value = serde_json::from_str(&self.lines.next().unwrap().unwrap()).unwrap();
            if line["id"] == id {
                return line;
            }
        }
    }
}

fn main() {
    let Some(script) = mcp_reference_server() else {
        println!("skipped: run `npm ci` in tests/mcp-servers");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let spec = ServerSpec::stdio("everything", "node", [script.display().to_string()]);

    let spawns: Vec<Duration> = (0..10)
        .map(|_| {
            runtime.block_on(async {
                let started = Instant::now();
                let server = RmcpConnector::default().connect(&spec).await.unwrap();
                let tools = server.tools().await.unwrap();
                let took = started.elapsed();
                assert!(!tools.is_empty());
                server.shutdown().await;
                took
            })
        })
        .collect();
    println!("stdio server spawn → tools listed: {}", percentiles(spawns));

    let runs = 300;
    let args = json!({"message": "x"});
    let server = runtime
        .block_on(RmcpConnector::default().connect(&spec))
        .unwrap();
    let mut direct = Direct::start(&script);
    let (mut through, mut raw) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let started = Instant::now();
        runtime
            .block_on(server.call("echo", args.clone(), CancellationToken::new()))
            .unwrap();
        through.push(started.elapsed());
        let started = Instant::now();
        let answer = direct.request("tools/call", json!({"name": "echo", "arguments": args}));
        raw.push(started.elapsed());
        assert!(answer["result"].is_object(), "{answer}");
    }
    println!(
        "tools/call echo through dsh's provider: {}",
        percentiles(through)
    );
    println!("tools/call echo written directly: {}", percentiles(raw));
    runtime.block_on(server.shutdown());
    let _ = direct.child.kill();

    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, "demo", &["--permission", "allow"]);
    acp.initialize(false);
    let news: Vec<Duration> = (0..20)
        .map(|_| {
            let started = Instant::now();
            let id = acp.request(
                "session/new",
                json!({"cwd": sandbox.work(), "mcpServers": [
                    {"name": "ghost", "command": "/nonexistent/mcp", "args": [], "env": []}]}),
            );
            let (answer, _) = acp.response(&id);
            assert!(answer["result"]["sessionId"].is_string(), "{answer}");
            started.elapsed()
        })
        .collect();
    println!(
        "session/new with a server that cannot start: {}",
        percentiles(news)
    );
    acp.finish();
}
