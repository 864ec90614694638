//! The interactive terminal end to end: the built `dsh` on a real pseudo-terminal, read
//! through a terminal emulator, against the mock model server (or a replay script), as a
//! person at a terminal uses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use dsh_e2e::Sandbox;
use dsh_e2e::tui::Tui;
use dsh_test_providers::mock_model::{MockModelServer, MockResponse, Split};
use serde_json::json;
use tokio::sync::Notify;

/// Rows enough that a test's whole conversation stays on the screen.
const ROWS: u16 = 60;
const COLS: u16 = 100;

/// The mock server on a runtime of its own, so the test's thread may block on the screen.
struct Model {
    runtime: tokio::runtime::Runtime,
    server: MockModelServer,
}

impl Model {
    fn start(responses: Vec<MockResponse>) -> Model {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(MockModelServer::start(responses));
        Model { runtime, server }
    }

    /// The request bodies the server received, in order.
    fn requests(&self) -> Vec<serde_json::Value> {
        self.server.requests().iter().map(|r| r.json()).collect()
    }

    /// Waits until request `index` (from 0) arrived.
    fn wait_request(&self, index: usize) {
        self.runtime.block_on(self.server.wait_arrival(index));
    }
}

/// `dsh` against `model` with `args` before the defaults, and a marker for the census.
fn dsh(sandbox: &Sandbox, model: &Model, args: &[&str], marker: &str) -> Tui {
    dsh_with(sandbox, model, args, marker, &[])
}

/// [`dsh`] with these environment variables set too.
fn dsh_with(
    sandbox: &Sandbox,
    model: &Model,
    args: &[&str],
    marker: &str,
    env: &[(&str, &str)],
) -> Tui {
    let base = model.server.base_url();
    let mut all = vec!["--base-url", base.as_str(), "--model", "m"];
    all.extend_from_slice(args);
    let mut envs = vec![("DSH_API_KEY_ENV", ""), ("DSH_TUI_MARK", marker)];
    envs.extend_from_slice(env);
    Tui::start(sandbox, &all, &envs, ROWS, COLS)
}

/// The text of the last user message of a request.
fn last_user_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

/// The first tool result a request carries back to the model, as JSON text.
fn tool_result(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string()
}

/// Every user message of a request, in order.
fn user_texts(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn mark(name: &str) -> String {
    format!("{name}-{}", std::process::id())
}

/// Nothing the session started is left once dsh exited.
fn census(marker: &str) {
    dsh_e2e::wait_gone(&format!("DSH_TUI_MARK={marker}"));
}

#[test]
fn a_prompt_streams_and_ctrl_d_leaves_the_whole_conversation_in_the_log() {
    let model = Model::start(vec![
        MockResponse::text("First **answer** line\nand the second line").segments(Split::Every(7)),
        MockResponse::text("a second answer"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("stream");
    let tui = dsh(&sandbox, &model, &[], &marker);
    tui.wait_for("› ");
    tui.line("hello there");
    tui.wait_for("and the second line");
    let screen = tui.screen();
    assert!(screen.contains("› hello there"), "{screen}");
    assert!(
        screen.contains("First answer line"),
        "Markdown shown, not its marks: {screen}"
    );
    tui.line("and again");
    tui.wait_for("a second answer");
    tui.keys(b"\x04");
    let (code, screen) = tui.exit();
    assert_eq!(code, 0, "{screen}");
    census(&marker);
    // The session is an ordinary one: listed, and its log holds the conversation.
    let id = sandbox.first_session_id();
    let listed = sandbox.dsh(["sessions", "list"]).output().unwrap();
    assert!(dsh_e2e::text(&listed.stdout).contains(&id[..8]));
    let shown = sandbox.dsh(["sessions", "show", &id]).output().unwrap();
    let shown = dsh_e2e::text(&shown.stdout);
    for said in [
        "hello there",
        "and the second line",
        "and again",
        "a second answer",
    ] {
        assert!(shown.contains(said), "{said:?} is not in the log:\n{shown}");
    }
    let requests = model.requests();
    assert_eq!(user_texts(&requests[1]), ["hello there", "and again"]);
}

#[test]
fn an_edit_answered_always_is_remembered_for_the_project_and_not_another() {
    let model = Model::start(vec![
        MockResponse::tool_call("write", &json!({"path": "a.txt", "content": "one\n"})),
        MockResponse::tool_call("write", &json!({"path": "b.txt", "content": "two\n"})),
        MockResponse::text("both written"),
        MockResponse::tool_call("write", &json!({"path": "c.txt", "content": "three\n"})),
        MockResponse::text("third written"),
        MockResponse::tool_call("write", &json!({"path": "d.txt", "content": "four\n"})),
        MockResponse::text("fourth written"),
    ]);
    let sandbox = Sandbox::new();
    // Another project, sharing this one's data directory (where answers are remembered).
    let other = Sandbox::new();
    for project in [sandbox.work(), other.work()] {
        std::fs::create_dir_all(project.join(".git")).unwrap();
    }
    let marker = mark("always");
    let tui = dsh(&sandbox, &model, &["--permission", "ask"], &marker);
    tui.wait_for("› ");
    tui.line("write two files");
    tui.wait_for("a yes, always here: every write call");
    tui.keys(b"a");
    tui.wait_for("both written");
    let screen = tui.screen();
    assert_eq!(
        screen.matches("? write").count(),
        1,
        "one question: {screen}"
    );
    assert!(
        screen.contains("✓ allowed from now on in this project: every write call"),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.work().join("b.txt")).unwrap(),
        "two\n"
    );
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    // A second session of the project is not asked.
    let tui = dsh(&sandbox, &model, &["--permission", "ask"], &marker);
    tui.wait_for("› ");
    tui.line("one more");
    tui.wait_for("third written");
    assert!(!tui.screen().contains("? write"), "{}", tui.screen());
    assert!(sandbox.work().join("c.txt").exists());
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    // Another project's session is.
    let data = sandbox.data().display().to_string();
    let tui = dsh_with(
        &other,
        &model,
        &["--permission", "ask"],
        &marker,
        &[("DSH_DATA_DIR", &data)],
    );
    tui.wait_for("› ");
    tui.line("elsewhere");
    tui.wait_for("? write");
    tui.keys(b"y");
    tui.wait_for("fourth written");
    assert!(other.work().join("d.txt").exists());
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn no_with_a_reason_tells_the_model_why() {
    let model = Model::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "rm -rf build"})),
        MockResponse::text("understood"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("reason");
    let tui = dsh(&sandbox, &model, &["--permission", "ask"], &marker);
    tui.wait_for("› ");
    tui.line("clean up");
    tui.wait_for("? bash wants to run $ rm -rf build");
    tui.keys(b"n");
    tui.wait_for("Why not?");
    tui.line("use cargo clean");
    tui.wait_for("understood");
    let requests = model.requests();
    let tool_result = tool_result(&requests[1]);
    assert!(tool_result.contains("use cargo clean"), "{tool_result}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn esc_mid_command_cancels_the_turn_and_keeps_the_partial_output() {
    let model = Model::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "echo started; sleep 600"})),
        MockResponse::text("after the cancel"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("esc");
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.line("run it");
    tui.wait_for("  started");
    tui.keys(b"\x1b");
    let screen = tui.wait_until("the turn ended, its spinner gone", |s| {
        s.contains("[cancelled]") && !s.contains("esc to interrupt")
    });
    assert!(screen.contains("  started"), "{screen}");
    // The session goes on.
    tui.line("go on");
    tui.wait_for("after the cancel");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn a_message_typed_while_a_command_runs_steers_the_next_request() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.path().join("go");
    dsh_test_support::tree::fifo(&fifo);
    let model = Model::start(vec![
        MockResponse::tool_call(
            "bash",
            &json!({"command": format!("echo waiting; cat {}", fifo.display())}),
        ),
        MockResponse::text("steered"),
    ]);
    let marker = mark("steer");
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.line("start");
    tui.wait_for("  waiting");
    tui.line("also check the docs");
    tui.wait_for("⧗ queued for the next step: also check the docs");
    std::fs::write(&fifo, b"").unwrap();
    tui.wait_for("steered");
    model.wait_request(1);
    let requests = model.requests();
    assert_eq!(last_user_text(&requests[1]), "also check the docs");
    assert_eq!(requests.len(), 2, "the steer entered the running turn");
    let screen = tui.screen();
    assert!(screen.contains("› also check the docs"), "{screen}");
    assert!(!screen.contains("queued"), "{screen}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn slash_model_switches_the_next_request_and_at_file_attaches_the_file() {
    let model = Model::start(vec![MockResponse::text("read it")]);
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("notes.md"), "the notes say 42\n").unwrap();
    let marker = mark("model");
    let tui = dsh(&sandbox, &model, &[], &marker);
    tui.wait_for("› ");
    tui.line("/model other-model");
    tui.wait_for("model: other-model from the next request on");
    tui.keys(b"summarise @not");
    tui.wait_for("notes.md");
    // Tab takes the completion.
    tui.keys(b"\t");
    tui.wait_for("summarise @notes.md");
    tui.keys(b"\r");
    tui.wait_for("read it");
    let screen = tui.screen();
    assert!(screen.contains("↳ attached notes.md"), "{screen}");
    assert!(
        screen.contains("other-model"),
        "the status line says it: {screen}"
    );
    let request = &model.requests()[0];
    assert_eq!(request["model"], "other-model");
    let text = last_user_text(request);
    assert!(text.starts_with("summarise @notes.md"), "{text}");
    assert!(
        text.contains("notes.md\n```\nthe notes say 42\n```"),
        "{text}"
    );
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn a_resize_mid_stream_reflows_what_follows() {
    let release = Arc::new(Notify::new());
    let words = "word ".repeat(30);
    let model = Model::start(vec![
        MockResponse::text(&format!("{words}end")).held_by(release.clone()),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("resize");
    let tui = dsh(&sandbox, &model, &[], &marker);
    tui.wait_for("› ");
    tui.line("talk");
    tui.wait_for("waiting for the model");
    tui.resize(ROWS, 40);
    tui.wait_until("a 40-column frame", |s| {
        s.lines()
            .any(|l| l.starts_with("────") && l.chars().count() == 40)
    });
    release.notify_one();
    let screen = tui.wait_until("the answer, then the composer", |s| {
        s.contains("end") && s.lines().any(|l| l.trim_end() == "›")
    });
    for line in screen.lines() {
        assert!(
            line.chars().count() <= 40,
            "{line:?} is wider than the terminal"
        );
    }
    // What was written before the resize is still there, and no piece of the old frame.
    assert!(screen.contains("› talk"), "{screen}");
    let rules = screen.lines().filter(|l| l.starts_with("───")).count();
    assert_eq!(rules, 1, "{screen}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn hostile_text_never_reaches_the_terminal_raw() {
    let model = Model::start(vec![
        MockResponse::tool_call(
            "bash",
            &json!({"command": "printf 'out\\033]52;c;QUFBQQ==\\007put\\033[2J\\n'"}),
        ),
        MockResponse::text("done \u{1b}]0;pwned\u{7} \u{1b}[2J"),
    ]);
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("a\u{1b}[31mred"), "x").unwrap();
    let marker = mark("hostile");
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.keys(b"look @a");
    tui.wait_for("look @a");
    tui.keys(b"\x15");
    tui.line("go");
    tui.wait_for("done");
    let raw = String::from_utf8_lossy(&tui.raw()).to_string();
    for hostile in ["\x1b]52", "\x1b]0;pwned", "\x1b[31mred", "\x1b[2J"] {
        assert!(!raw.contains(hostile), "{hostile:?} reached the terminal");
    }
    let screen = tui.screen();
    // The command's bytes reach the screen with the escape sequences taken out.
    assert!(screen.contains("  output"), "{screen}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn without_a_terminal_dsh_says_to_use_dsh_run_and_exits_2() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh_without_terminal(Vec::<&str>::new())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = dsh_e2e::text(&out.stderr);
    assert!(said.contains("use `dsh run"), "{said}");
    assert!(sandbox.logs().is_empty(), "no session was made");
}

#[test]
fn continue_and_resume_open_this_directory_s_sessions() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "one",
        json!([{"stream": [{"text": "the first answer"}], "finish": "stop"},
               {"stream": [{"text": "the second answer"}], "finish": "stop"}]),
    );
    let first = Tui::start(&sandbox, &["--replay", &script], &[], ROWS, COLS);
    first.wait_for("› ");
    first.line("first question");
    first.wait_for("the first answer");
    first.keys(b"\x04");
    assert_eq!(first.exit().0, 0);
    let id = sandbox.first_session_id();
    // `-c` shows the past conversation and goes on in the same session.
    let again = Tui::start(&sandbox, &["--replay", &script, "-c"], &[], ROWS, COLS);
    let screen = again.wait_for("the first answer");
    assert!(screen.contains("› first question"), "{screen}");
    assert!(
        screen.contains(&format!("resumed session {id}")),
        "{screen}"
    );
    again.keys(b"\x04");
    assert_eq!(again.exit().0, 0);
    assert_eq!(sandbox.logs().len(), 1);
    // `--resume` without an id offers a picker; Enter opens the highlighted one.
    let picked = Tui::start(
        &sandbox,
        &["--replay", &script, "--resume"],
        &[],
        ROWS,
        COLS,
    );
    picked.wait_for("choose a session");
    picked.wait_for("first question");
    picked.keys(b"\r");
    picked.wait_for(&format!("resumed session {id}"));
    picked.keys(b"\x04");
    assert_eq!(picked.exit().0, 0);
}

#[test]
fn a_prompt_sent_at_once_waits_for_the_mcp_servers_and_offers_their_tools() {
    let model = Model::start(vec![MockResponse::text("with tools")]);
    let sandbox = Sandbox::new();
    // The server starts only once the test opens the fifo: after the prompt was sent.
    let fifo = sandbox.root.path().join("start");
    dsh_test_support::tree::fifo(&fifo);
    let config = sandbox.root.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp_servers.fault]\ncommand = \"sh\"\nargs = [\"-c\", \"cat {} > /dev/null; exec {}\"]\n\n\
             [mcp_servers.ghost]\ncommand = \"/nonexistent/mcp-ghost\"\n",
            fifo.display(),
            env!("CARGO_BIN_EXE_mcp-fault-server")
        ),
    )
    .unwrap();
    let marker = mark("mcp");
    let base = model.server.base_url();
    let tui = Tui::start(
        &sandbox,
        &["--base-url", &base, "--model", "m"],
        &[
            ("DSH_API_KEY_ENV", ""),
            ("DSH_TUI_MARK", &marker),
            ("DSH_CONFIG", config.to_str().unwrap()),
        ],
        ROWS,
        COLS,
    );
    tui.wait_for("› ");
    tui.line("now");
    tui.wait_for("esc to interrupt");
    std::fs::write(&fifo, b"").unwrap();
    tui.wait_for("with tools");
    let screen = tui.screen();
    assert!(
        screen.contains("warning: MCP server ghost did not start"),
        "{screen}"
    );
    let tools: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.iter().any(|t| t == "fault__echo"), "{tools:?}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn sigterm_ends_the_session_in_order_and_gives_the_terminal_back() {
    let model = Model::start(vec![MockResponse::tool_call(
        "bash",
        &json!({"command": "echo running; sleep 600"}),
    )]);
    let sandbox = Sandbox::new();
    let marker = mark("sigterm");
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.line("go");
    tui.wait_for("  running");
    let pid = rustix::process::Pid::from_raw(tui.pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let (code, _, raw) = tui.exit_with_raw();
    assert_eq!(code, 143);
    census(&marker);
    // The last thing written gives the terminal back: paste mode off, the cursor shown.
    let raw = String::from_utf8_lossy(&raw).to_string();
    let end = &raw[raw
        .rfind("\x1b[?2004l")
        .expect("bracketed paste turned off")..];
    assert!(!end.contains("\x1b[?2004h"), "{end:?}");
    assert!(raw.contains("\x1b[?25h"), "the cursor is shown");
}

#[test]
fn ctrl_c_cancels_a_running_command_and_a_second_quits_leaving_nothing_running() {
    let model = Model::start(vec![MockResponse::tool_call(
        "bash",
        &json!({"command": "echo busy; sleep 600"}),
    )]);
    let sandbox = Sandbox::new();
    let marker = mark("ctrlc");
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.line("go");
    tui.wait_for("  busy");
    tui.keys(b"\x03");
    tui.wait_for("Ctrl-C again to quit");
    tui.keys(b"\x03");
    let (code, screen) = tui.exit();
    assert_eq!(code, 0, "{screen}");
    census(&marker);
    assert_eq!(sandbox.logs().len(), 1);
}

#[test]
fn quitting_before_any_prompt_stores_no_session() {
    let model = Model::start(Vec::new());
    let sandbox = Sandbox::new();
    let marker = mark("empty");
    let tui = dsh(&sandbox, &model, &[], &marker);
    tui.wait_for("› ");
    tui.keys(b"\x03");
    tui.wait_for("Ctrl-C again to quit");
    tui.keys(b"\x03");
    assert_eq!(tui.exit().0, 0);
    assert!(sandbox.logs().is_empty(), "{:?}", sandbox.logs());
    census(&marker);
}

#[test]
fn no_color_keeps_colours_off_the_terminal() {
    let model = Model::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "exit 3"})),
        MockResponse::text("# Heading\nsome `code`"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("nocolor");
    let tui = dsh_with(
        &sandbox,
        &model,
        &["--permission", "allow"],
        &marker,
        &[("NO_COLOR", "1")],
    );
    tui.wait_for("› ");
    tui.line("go");
    tui.wait_for("some code");
    let raw = String::from_utf8_lossy(&tui.raw()).to_string();
    // Foreground colours are SGR 30-37, 90-97 or 38;…: none is written.
    for colour in ["\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m", "\x1b[38;"] {
        assert!(!raw.contains(colour), "{colour:?} was written");
    }
    assert!(tui.screen().contains("✗ exit 3"), "{}", tui.screen());
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn a_retry_is_said_by_the_spinner_and_a_refused_key_says_where_the_key_comes_from() {
    let model = Model::start(vec![
        MockResponse::status(429)
            .header("retry-after", "3")
            .body(r#"{"error":{"message":"slow down"}}"#),
        MockResponse::text("after the retry"),
        MockResponse::status(401).body(r#"{"error":{"message":"bad key"}}"#),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("retry");
    let tui = dsh(&sandbox, &model, &[], &marker);
    tui.wait_for("› ");
    tui.line("first");
    tui.wait_for("server busy (HTTP 429) — retrying in");
    tui.wait_for("after the retry");
    tui.line("second");
    let screen = tui.wait_for("dsh sent no key to 127.0.0.1: api_key_env is empty");
    assert!(screen.contains("bad key (auth)"), "{screen}");
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn by_default_commands_run_unasked_in_the_sandbox_and_stay_in_the_project() {
    let model = Model::start(vec![
        MockResponse::tool_call(
            "bash",
            &json!({"command": "touch inside; touch ../outside"}),
        ),
        MockResponse::text("tried"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("confined");
    let tui = dsh(&sandbox, &model, &[], &marker);
    let screen = tui.wait_for("› ");
    assert!(
        screen.contains("accept-edits"),
        "the default mode: {screen}"
    );
    tui.line("go");
    let screen = tui.wait_for("tried");
    assert!(!screen.contains("? bash"), "nothing asked: {screen}");
    assert!(screen.contains("Permission denied"), "{screen}");
    assert!(sandbox.work().join("inside").exists());
    assert!(!sandbox.root.path().join("outside").exists());
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn leaving_the_sandbox_is_asked_with_the_reason_and_a_refusal_says_why_it_failed() {
    let model = Model::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "touch ../outside"})),
        MockResponse::tool_call(
            "bash",
            &json!({"command": "touch ../outside", "outside_sandbox": "the build writes next to the project"}),
        ),
        MockResponse::text("written"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("escalate");
    // Allow: nothing else asks, and leaving the sandbox still does.
    let tui = dsh(&sandbox, &model, &["--permission", "allow"], &marker);
    tui.wait_for("› ");
    tui.line("write outside");
    let screen = tui.wait_for("outside the sandbox: the build writes next to the project");
    assert!(
        screen.contains("? bash wants to run $ touch ../outside"),
        "{screen}"
    );
    assert!(!sandbox.root.path().join("outside").exists());
    tui.keys(b"y");
    tui.wait_for("written");
    assert!(sandbox.root.path().join("outside").exists());
    // The confined attempt came back to the model with what the sandbox did.
    let requests = model.requests();
    let first_result = tool_result(&requests[1]);
    assert!(
        first_result.contains("this command ran in the sandbox"),
        "{first_result}"
    );
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn without_landlock_the_start_says_so_and_every_command_asks_even_in_allow_mode() {
    let model = Model::start(vec![
        MockResponse::tool_call("bash", &json!({"command": "touch made"})),
        MockResponse::text("made it"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("nolandlock");
    let tui = dsh_with(
        &sandbox,
        &model,
        &["--permission", "allow"],
        &marker,
        &[("DSH_SANDBOX_LANDLOCK", "off")],
    );
    let screen = tui.wait_for("› ");
    assert!(
        screen.contains("warning: the workspace-write sandbox"),
        "{screen}"
    );
    tui.line("go");
    tui.wait_for("? bash wants to run $ touch made");
    assert!(!sandbox.work().join("made").exists());
    tui.keys(b"y");
    tui.wait_for("made it");
    assert!(sandbox.work().join("made").exists());
    tui.keys(b"\x04");
    assert_eq!(tui.exit().0, 0);
    census(&marker);
}

#[test]
fn a_subagents_work_shows_under_its_task_and_its_question_names_it() {
    let model = Model::start(vec![
        MockResponse::tool_call(
            "task",
            &json!({"description": "check files", "prompt": "look around"}),
        ),
        MockResponse::tool_call("bash", &json!({"command": "echo from-child"})),
        MockResponse::text("the child saw it"),
        MockResponse::text("parent heard back"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("subagent");
    let tui = dsh(&sandbox, &model, &["--permission", "ask"], &marker);
    tui.wait_for("› ");
    tui.line("delegate");
    let asked = tui.wait_for("asks:");
    assert!(
        asked.contains("subagent \u{201c}check files\u{201d} asks:"),
        "{asked}"
    );
    tui.keys(b"y");
    let screen = tui.wait_for("parent heard back");
    assert!(
        screen.contains("↳ check files · $ echo from-child"),
        "{screen}"
    );
    assert!(screen.contains("↳ check files · done"), "{screen}");
    tui.keys(b"\x04");
    let (code, screen) = tui.exit();
    assert_eq!(code, 0, "{screen}");
    census(&marker);
}

/// The interactive terminal with its sessions in PostgreSQL: the same conversation, stored
/// there and read back, nothing in the data directory.
#[test]
fn over_postgresql_the_terminal_keeps_and_reopens_its_conversation() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(url) = runtime.block_on(dsh_test_providers::postgres::fresh_database()) else {
        return;
    };
    let model = Model::start(vec![
        MockResponse::text("kept in the database"),
        MockResponse::text("still there"),
    ]);
    let sandbox = Sandbox::new();
    let marker = mark("postgres");
    let env = [("DSH_SESSIONS_URL", url.as_str())];
    let tui = dsh_with(&sandbox, &model, &[], &marker, &env);
    tui.wait_for("› ");
    tui.line("remember this");
    tui.wait_for("kept in the database");
    tui.keys(b"\x04");
    let (code, screen) = tui.exit();
    assert_eq!(code, 0, "{screen}");
    census(&marker);
    assert!(sandbox.logs().is_empty(), "nothing in the data directory");
    // `dsh -c` reopens it from the database, history and all.
    let tui = dsh_with(&sandbox, &model, &["-c"], &marker, &env);
    tui.wait_for("remember this");
    tui.line("and now");
    tui.wait_for("still there");
    tui.keys(b"\x04");
    let (code, screen) = tui.exit();
    assert_eq!(code, 0, "{screen}");
    census(&marker);
    let requests = model.requests();
    assert_eq!(user_texts(&requests[1]), ["remember this", "and now"]);
}
