//! The agent with a faulty MCP server (the in-repo fault server), end to end: a server that
//! crashes mid-call fails that call and is started again once; a tool whose schema the model
//! API would refuse is left out with a warning; a 10 MiB answer reaches the model cut; a
//! changed tool list is offered at the very next request; a cancelled ACP turn sends MCP's
//! cancellation to the server; a configured server that is slow to start delays neither
//! `initialize` nor anything but the sessions that need it; the server's stderr goes to
//! dsh's log, never to stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::mcp_fault::{FaultReports, REPORT_VAR};
use dsh_e2e::{Sandbox, gone, text};
use serde_json::{Value, json};

const FAULT_SERVER: &str = env!("CARGO_BIN_EXE_mcp-fault-server");

/// The line the fault server writes to its stderr as it starts.
const STDERR_LINE: &str = "fault server: a line on stderr";

/// A configuration file with the fault server as `faults`, reporting to `reports`.
fn config(sandbox: &Sandbox, reports: &FaultReports, extra: &str) -> std::path::PathBuf {
    let path = sandbox.root.path().join("config.toml");
    std::fs::write(
        &path,
        format!(
            "[mcp_servers.faults]\ncommand = {FAULT_SERVER:?}\n{extra}\
             env = {{ {REPORT_VAR} = {:?}, DSH_MCP_FAULT = {:?} }}\n",
            reports.path().display().to_string(),
            sandbox.root.path().display().to_string(),
        ),
    )
    .unwrap();
    path
}

fn marker(sandbox: &Sandbox) -> String {
    format!("DSH_MCP_FAULT={}", sandbox.root.path().display())
}

/// The `tool/result` records of the sandbox's only session.
fn results(sandbox: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(&sandbox.logs()[0])
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool/result")
        .map(|e| e["data"].clone())
        .collect()
}

/// The model requests the replay model received.
fn requests(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn calls(steps: &[(&str, Value)]) -> Value {
    let mut script: Vec<Value> = steps
        .iter()
        .map(|(name, arguments)| {
            json!({"stream": [{"tool_call": {"name": name, "arguments": arguments}}]})
        })
        .collect();
    script.push(json!({"stream": [{"text": "done"}], "finish": "stop"}));
    Value::Array(script)
}

async fn run(command: std::process::Command) -> std::process::Output {
    let mut command = command;
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_is_started_again_once_and_the_turn_goes_on() {
    let sandbox = Sandbox::new();
    let mut reports = FaultReports::new();
    let path = config(&sandbox, &reports, "");
    let replay = sandbox.script(
        "crash",
        calls(&[
            ("faults__crash", json!({})),
            ("faults__echo", json!({"text": "after the restart"})),
            ("faults__crash", json!({})),
            ("faults__echo", json!({"text": "a third start"})),
        ]),
    );
    let mut command = sandbox.dsh(["--replay", &replay, "run", "use the faulty server"]);
    command
        .env("DSH_CONFIG", &path)
        .env("DSH_LOG", "dsh::mcp=info");
    let out = run(command).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // The server's stderr is in dsh's log (on stderr, named), never on stdout.
    let logged: Vec<&str> = stderr.lines().filter(|l| l.contains(STDERR_LINE)).collect();
    assert_eq!(logged.len(), 2, "one per start: {stderr}");
    assert!(
        logged
            .iter()
            .all(|l| l.contains("dsh::mcp") && l.contains("server=faults"))
    );
    assert!(!text(&out.stdout).contains(STDERR_LINE));

    let first = reports.wait_for("started").await;
    let second = reports.wait_for("started").await;
    assert_ne!(first, second);
    let results = results(&sandbox);
    assert_eq!(results.len(), 4, "{results:?}");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["error_code"], "mcp_server_gone");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("started again at the next call"),
        "{results:?}"
    );
    assert_eq!(results[1]["content"], "after the restart");
    assert_eq!(results[2]["error_code"], "mcp_server_gone");
    assert_eq!(results[3]["error_code"], "mcp_server_gone");
    assert!(
        results[3]["content"]
            .as_str()
            .unwrap()
            .contains("not started a third time"),
        "{results:?}"
    );
    let marker = marker(&sandbox);
    gone(marker).await;
    assert!(
        !reports.so_far().iter().any(|r| r.starts_with("started")),
        "a third start"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_schemas_huge_answers_and_changed_tool_lists_are_handled_for_the_model() {
    let sandbox = Sandbox::new();
    let reports = FaultReports::new();
    let path = config(&sandbox, &reports, "");
    let log = sandbox.root.path().join("calls.jsonl");
    let replay = sandbox.script(
        "faults",
        calls(&[
            ("faults__huge", json!({})),
            ("faults__grow", json!({})),
            ("faults__grown", json!({})),
        ]),
    );
    let mut command = sandbox.dsh(["--replay", &replay, "run", "use the faulty server"]);
    command.env("DSH_CONFIG", &path).env("DSH_REPLAY_LOG", &log);
    let out = run(command).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // At the default log level a server's stderr shows nowhere.
    assert!(!stderr.contains(STDERR_LINE) && !text(&out.stdout).contains(STDERR_LINE));

    // The tool whose schema a model API refuses is named in one warning and never offered.
    let warned: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("bad-schema"))
        .collect();
    assert_eq!(warned.len(), 1, "{stderr}");
    assert!(
        warned[0].starts_with("warning: MCP server faults: tool \"bad-schema\" is not offered")
            && warned[0].contains("must be an object"),
        "{stderr}"
    );
    let requests = requests(&log);
    let offered = |i: usize| -> Vec<String> {
        requests[i]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    assert!(offered(0).contains(&"faults__echo".to_owned()));
    assert!(
        !offered(0).iter().any(|t| t.contains("bad")),
        "{:?}",
        offered(0)
    );

    // The 10 MiB answer reaches the model cut, saying how much there was.
    let results = results(&sandbox);
    let huge = results[0]["content"].as_str().unwrap();
    assert!(huge.len() < 70 * 1024, "{}", huge.len());
    assert!(
        huge.ends_with(&format!(
            "[… cut: the server returned {} bytes; the first 65536 are shown]",
            10 << 20
        )),
        "{}",
        &huge[huge.len() - 200..]
    );

    // A person following the run sees the answer's head; the stored transcript has it all.
    // (Tools' output goes to stderr beside the answer on stdout.)
    let shown = huge.lines().count() - 20;
    assert!(
        stderr.contains(&format!("[… {shown} more lines not shown]")),
        "{}",
        &stderr[..stderr.len().min(3000)]
    );
    assert!(stderr.len() < 8 * 1024, "{}", stderr.len());
    let id = sandbox.first_session_id();
    let stored = run(sandbox.dsh(["sessions", "show", &id])).await;
    assert!(text(&stored.stdout).contains("the first 65536 are shown]"));

    // The tool `grow` added is offered in the request right after its call, and works.
    assert!(!offered(1).contains(&"faults__grown".to_owned()));
    assert!(
        offered(2).contains(&"faults__grown".to_owned()),
        "{:?}",
        offered(2)
    );
    assert_eq!(results[2]["content"], "grown answers");
    let marker = marker(&sandbox);
    gone(marker).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_acp_turn_sends_mcp_s_cancellation_to_the_editor_s_server() {
    let sandbox = Sandbox::new();
    let mut reports = FaultReports::new();
    let replay = sandbox.script("hang", calls(&[("faults__hang", json!({}))]));
    let mut acp = AcpDriver::start(&sandbox, &replay, &["--permission", "allow"]);
    acp.initialize(false);
    let marker = marker(&sandbox);
    let (key, value) = marker.split_once('=').unwrap();
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": [{
            "name": "faults", "command": FAULT_SERVER, "args": [],
            "env": [{"name": REPORT_VAR, "value": reports.path()},
                    {"name": key, "value": value}]}]}),
    );
    let session = acp.response(&id).0["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let prompt = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hang"}]}),
    );
    reports.wait_for("hang").await;
    acp.notify("session/cancel", json!({"sessionId": session}));
    // The server's handler saw MCP's cancellation for the call.
    reports.wait_for("cancelled").await;
    let (answer, _) = acp.response(&prompt);
    assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
    let close = acp.request("session/close", json!({"sessionId": session}));
    acp.response(&close);
    gone(marker).await;
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_server_slow_to_start_holds_back_sessions_not_initialize() {
    let sandbox = Sandbox::new();
    let mut reports = FaultReports::new();
    // A minute to start: only the test ending it lets a session be created sooner.
    let path = config(
        &sandbox,
        &reports,
        "args = [\"--never-start\"]\nstartup_timeout_ms = 60000\n",
    );
    let replay = sandbox.script("slow", calls(&[]));
    let mut command = sandbox.dsh(["--replay", &replay, "acp"]);
    command.env("DSH_CONFIG", &path);
    let mut acp = AcpDriver::spawn(command);
    // `initialize` is answered while the server is still starting.
    acp.initialize_with(json!({"session": {"notices": {}}}));
    let pid = reports.wait_for("started").await;
    assert!(
        dsh_e2e::marked_processes(&marker(&sandbox)).contains(&pid),
        "the server was still starting"
    );
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": []}),
    );
    // The session waits for it; ending the server ends the wait, and the person is told.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let (created, updates) = acp.response(&id);
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let (_, more) = acp.prompt_to_end(&session, "hello");
    let notices: Vec<String> = updates
        .iter()
        .chain(more.iter())
        .filter(|u| u["sessionUpdate"] == "notice")
        .map(Value::to_string)
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("faults") && n.contains("did not start")),
        "{notices:?}"
    );
    acp.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_ask_mode_allow_always_covers_one_mcp_tool_and_read_only_ones_never_ask() {
    let sandbox = Sandbox::new();
    let reports = FaultReports::new();
    let path = config(&sandbox, &reports, "");
    let replay = sandbox.script(
        "always",
        calls(&[
            ("faults__huge", json!({"bytes": 10})),
            ("faults__huge", json!({"bytes": 20})),
            ("faults__echo", json!({"text": "a read"})),
            ("faults__grow", json!({})),
        ]),
    );
    let mut command = sandbox.dsh(["--replay", &replay, "acp"]);
    command.env("DSH_CONFIG", &path);
    let asked = tokio::task::spawn_blocking(move || {
        let mut acp = AcpDriver::spawn(command);
        acp.policy = dsh_e2e::acp::Policy::Always;
        acp.initialize(false);
        let session = acp.new_session(&sandbox.work());
        let (response, _) = acp.prompt_to_end(&session, "go");
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
        let asked: Vec<String> = acp
            .asked
            .iter()
            .map(|q| {
                q["params"]["toolCall"]["title"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        acp.finish();
        asked
    })
    .await
    .unwrap();
    // `huge` asked once (then always allowed), `echo` is read-only, and `grow`, another
    // tool of the same server, asked for itself.
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].starts_with("faults: huge"), "{asked:?}");
    assert!(asked[1].starts_with("faults: grow"), "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_servers_start_side_by_side() {
    let sandbox = Sandbox::new();
    let mut reports = FaultReports::new();
    // Two servers that would each take a minute: both are running before either is given up
    // on, which a start one after the other could not show.
    let path = sandbox.root.path().join("config.toml");
    let mut body = String::new();
    for name in ["first", "second"] {
        body.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = {FAULT_SERVER:?}\nargs = [\"--never-start\"]\n\
             startup_timeout_ms = 60000\nenv = {{ {REPORT_VAR} = {:?}, DSH_MCP_FAULT = {:?} }}\n\n",
            reports.path().display().to_string(),
            sandbox.root.path().display().to_string(),
        ));
    }
    std::fs::write(&path, body).unwrap();
    let replay = sandbox.script("side", calls(&[]));
    let mut command = sandbox.dsh(["--replay", &replay, "run", "hello"]);
    command.env("DSH_CONFIG", &path);
    let run = tokio::spawn(run(command));
    let one = reports.wait_for("started").await;
    let two = reports.wait_for("started").await;
    for pid in [one, two] {
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        )
        .unwrap();
    }
    let out = run.await.unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for name in ["first", "second"] {
        let warned = format!("warning: MCP server {name} did not start");
        assert!(stderr.contains(&warned), "{stderr}");
    }
    gone(marker(&sandbox)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_a_running_mcp_call_spins_and_ctrl_c_cancels_it_at_the_server() {
    let sandbox = Sandbox::new();
    let mut reports = FaultReports::new();
    let path = config(&sandbox, &reports, "");
    let replay = sandbox.script("spin", calls(&[("faults__hang", json!({}))]));
    let path = path.display().to_string();
    let mut term = dsh_e2e::pty::Terminal::run_with(
        &sandbox,
        &["run", "--replay", &replay, "go"],
        &[("TERM", "xterm-256color"), ("DSH_CONFIG", &path)],
    );
    // The spinner names the tool while the server has the call.
    term.expect("· ▸ faults__hang");
    reports.wait_for("hang").await;
    term.type_keys(b"\x03");
    reports.wait_for("cancelled").await;
    let (code, seen) = term.exit_code();
    assert_eq!(code, 130, "{seen}");
    assert!(
        seen.contains("[cancelled by the user after ")
            && seen.contains("s; MCP server faults was told to stop the call]"),
        "{seen}"
    );
    gone(marker(&sandbox)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_in_ask_mode_the_question_is_not_drawn_over_by_a_spinner() {
    let sandbox = Sandbox::new();
    let reports = FaultReports::new();
    let path = config(&sandbox, &reports, "");
    let replay = sandbox.script("ask", calls(&[("faults__huge", json!({"bytes": 30}))]));
    let path = path.display().to_string();
    let mut term = dsh_e2e::pty::Terminal::run_with(
        &sandbox,
        &["run", "--permission", "ask", "--replay", &replay, "go"],
        &[("TERM", "xterm-256color"), ("DSH_CONFIG", &path)],
    );
    let question = "dsh · allow faults__huge: {\"bytes\":30}  [y/N] ";
    term.expect(question);
    // The question starts a line of its own: the call's spinner was cleared for it.
    let before = &term.seen[..term.seen.find(question).unwrap()];
    assert!(
        before.ends_with('\n') || before.ends_with("\r\u{1b}[2K"),
        "{before:?}"
    );
    term.type_keys(b"y\r");
    term.expect("0123456789abcdef0123456789abcd");
    let (code, seen) = term.exit_code();
    assert_eq!(code, 0, "{seen}");
}
