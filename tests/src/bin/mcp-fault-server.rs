//! An MCP server over stdio, built on rmcp's server side, that misbehaves on request: the
//! peer for the MCP client's fault tests.
//!
//! Tools:
//! - `echo` (`text`): answers the text; marked read-only.
//! - `crash`: the process exits before it answers.
//! - `hang`: never answers; when MCP's cancellation for the call arrives it reports
//!   `cancelled`.
//! - `huge` (`bytes`, default 10 MiB): answers that many bytes of text.
//! - `grow`: adds the tool `grown`, tells the client its tool list changed, and answers
//!   once the client listed the tools again (or after 10 s), so a test knows the client
//!   heard it before the answer arrived.
//! - `bad-schema`: its input schema is an array's, which a model API refuses.
//!
//! It writes one line to its stderr as it starts: `fault server: a line on stderr`.
//!
//! `--never-start` reads its input and never answers, so it never finishes starting.
//! `--hostile-tools` adds a tool whose name is 1 MiB long and one whose input schema is
//! 100 KiB. `--stderr-flood N` first writes N bytes to stderr without a newline.
//!
//! What happens is reported, a line per connection, to the Unix socket that the variable
//! `MCP_FAULT_REPORT` names, when set: `started <pid>`, `hang <pid>`, `cancelled <pid>`,
//! `crash <pid>`. Tests wait on those lines instead of on time.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value, json};

/// What the server writes to its stderr as it starts.
const STDERR_LINE: &str = "fault server: a line on stderr";

/// Sends one line to the test's socket, if the test gave one.
fn report(what: &str) {
    let Some(path) = std::env::var_os("MCP_FAULT_REPORT") else {
        return;
    };
    if let Ok(mut socket) = std::os::unix::net::UnixStream::connect(path) {
        let _ = writeln!(socket, "{what} {}", std::process::id());
    }
}

fn object(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

#[derive(Default)]
struct Faults {
    grown: AtomicBool,
    /// `--hostile-tools`.
    hostile: bool,
    /// How many times the tools were listed.
    listings: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Faults {
    fn tools(&self) -> Vec<Tool> {
        let mut read_only = ToolAnnotations::new();
        read_only.read_only_hint = Some(true);
        let mut tools = vec![
            Tool::new(
                "echo",
                "Answers its text.",
                object(json!({"type": "object", "properties": {"text": {"type": "string"}}})),
            )
            .annotate(read_only),
            Tool::new("crash", "Exits before answering.", object(json!({}))),
            Tool::new("hang", "Never answers.", object(json!({"type": "object"}))),
            Tool::new(
                "huge",
                "Answers many bytes.",
                object(json!({"type": "object", "properties": {"bytes": {"type": "integer"}}})),
            ),
            Tool::new("grow", "Adds a tool.", object(json!({"type": "object"}))),
            Tool::new(
                "bad-schema",
                "Takes an array.",
                object(json!({"type": "array"})),
            ),
        ];
        if self.hostile {
            tools.push(Tool::new(
                "n".repeat(1 << 20),
                "A tool with a 1 MiB name.",
                object(json!({"type": "object"})),
            ));
            tools.push(Tool::new(
                "wide-schema",
                "A tool whose schema is 100 KiB.",
                object(json!({"type": "object", "description": "s".repeat(100 << 10)})),
            ));
        }
        if self.grown.load(Ordering::SeqCst) {
            tools.push(Tool::new(
                "grown",
                "The tool grow added.",
                object(json!({"type": "object"})),
            ));
        }
        tools
    }
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text.into())]).into()
}

impl ServerHandler for Faults {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools();
        self.listings.send_modify(|n| *n += 1);
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => Ok(text(
                args.get("text").and_then(Value::as_str).unwrap_or_default(),
            )),
            "crash" => {
                report("crash");
                std::process::exit(3)
            }
            "hang" => {
                report("hang");
                context.ct.cancelled().await;
                report("cancelled");
                Err(ErrorData::internal_error("cancelled", None))
            }
            "huge" => {
                let bytes = args
                    .get("bytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(10 << 20);
                let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
                let mut out = line.repeat(usize::try_from(bytes).unwrap_or(0) / line.len() + 1);
                out.truncate(usize::try_from(bytes).unwrap_or(0));
                Ok(text(out))
            }
            "grow" => {
                let mut listings = self.listings.subscribe();
                listings.mark_unchanged();
                self.grown.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                let relisted = listings.changed();
                let _ = tokio::time::timeout(std::time::Duration::from_secs(10), relisted).await;
                Ok(text("added grown"))
            }
            "grown" => Ok(text("grown answers")),
            other => Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--never-start") {
        report("started");
        // Reads and ignores its input until the client gives up on it.
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
        return;
    }
    report("started");
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--stderr-flood") {
        let bytes: usize = args.get(at + 1).and_then(|n| n.parse().ok()).unwrap_or(0);
        let chunk = vec![b'e'; 64 << 10];
        let mut left = bytes;
        let mut stderr = std::io::stderr().lock();
        while left > 0 {
            let n = left.min(chunk.len());
            let _ = stderr.write_all(&chunk[..n]);
            left -= n;
        }
    }
    // A server's stderr belongs in the client's log, never on its user's screen.
    eprintln!("{STDERR_LINE}");
    let faults = Faults {
        hostile: args.iter().any(|a| a == "--hostile-tools"),
        ..Faults::default()
    };
    let Ok(service) = faults.serve(rmcp::transport::stdio()).await else {
        return;
    };
    let _ = service.waiting().await;
}
