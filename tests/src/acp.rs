//! `AcpDriver`: the built `dsh acp` over piped stdio, as an editor drives it, with the
//! protocol's invariants checked on the whole transcript.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Sandbox;

mod invariants;
pub use invariants::{Wire, check as check_invariants};

/// Whether an update is a `usage_update`, which follows every model call: the prompt helpers
/// keep those apart ([`AcpDriver::usage`]), so that suites about other updates read the same.
pub fn is_usage(update: &Value) -> bool {
    update["sessionUpdate"] == "usage_update"
}

/// The `sessionUpdate` kind of each update, in order.
pub fn update_kinds(updates: &[Value]) -> Vec<&str> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("<none>"))
        .collect()
}

/// The id of the background task a bash card started (`started background task <id>`), read
/// from an update.
pub fn started_task(update: &Value) -> Option<String> {
    update["content"][0]["content"]["text"]
        .as_str()?
        .strip_prefix("started background task ")?
        .split_whitespace()
        .next()
        .map(str::to_owned)
}

/// How the driver answers `session/request_permission`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// `allow_once`.
    Allow,
    /// `allow_always`.
    Always,
    /// `reject_once`.
    Reject,
    /// Outcome `cancelled`.
    Dismiss,
    /// A JSON-RPC error.
    Error,
    /// An option id that was not offered.
    Bogus,
    /// No answer.
    Hold,
}

/// A running `dsh acp`.
pub struct AcpDriver {
    child: Option<Child>,
    pid: u32,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    /// Every stdout line so far.
    pub transcript: Vec<Value>,
    /// Both directions in the order the driver saw them, for the invariants.
    pub wire: Vec<Wire>,
    next_id: i64,
    /// How permission requests are answered.
    pub policy: Policy,
    /// Permission requests seen (their frames).
    pub asked: Vec<Value>,
    /// When set, the driver answers `fs/read_text_file` and `fs/write_text_file` as an
    /// editor holding these buffers would.
    pub editor: Option<Editor>,
    /// The `usage_update`s the prompt helpers set apart, in order.
    pub usage: Vec<Value>,
    /// Every `available_commands_update` frame, set apart by [`AcpDriver::next_frame`].
    pub commands: Vec<Value>,
    /// Every `session_info_update` frame (a session's title), set apart likewise.
    pub titles: Vec<Value>,
    /// Frames [`AcpDriver::commands_of`] read past while waiting; [`AcpDriver::next_frame`]
    /// returns them first, so nothing a later helper waits for is lost.
    stray: std::collections::VecDeque<Value>,
}

/// An editor's open buffers, as the driver plays one.
#[derive(Debug, Default)]
pub struct Editor {
    /// Unsaved buffers by absolute path; a read of any other path reads the disk.
    pub buffers: std::collections::HashMap<std::path::PathBuf, String>,
    /// Answer every write with an error.
    pub fail_writes: bool,
    /// The `fs/*` requests received, in order.
    pub calls: Vec<Value>,
}

/// What the driver waits at most for any one frame: a hang detector, not a budget.
const STEP: Duration = Duration::from_secs(20);

impl AcpDriver {
    /// `dsh --data-dir <sandbox> --replay <script> acp <args…>` in the sandbox's work dir.
    pub fn start(sandbox: &Sandbox, script: &str, args: &[&str]) -> AcpDriver {
        let mut command: Command = sandbox.dsh(["--replay", script, "acp"]);
        command.args(args);
        AcpDriver::spawn(command)
    }

    /// [`AcpDriver::start`] with `--permission allow`: calls run without asking.
    pub fn allowing(sandbox: &Sandbox, script: &str) -> AcpDriver {
        AcpDriver::start(sandbox, script, &["--permission", "allow"])
    }

    /// [`AcpDriver::start`] with the replay model's call log on; returns the log's path
    /// (one JSON line per model request, absent until the first).
    pub fn logging(
        sandbox: &Sandbox,
        script: &str,
        args: &[&str],
    ) -> (AcpDriver, std::path::PathBuf) {
        let log = sandbox.root.path().join("calls.jsonl");
        let mut command: Command = sandbox.dsh(["--replay", script, "acp"]);
        command.args(args).env("DSH_REPLAY_LOG", &log);
        (AcpDriver::spawn(command), log)
    }

    /// `dsh --base-url <url> acp <args…>` against a keyless OpenAI-compatible server (the mock
    /// model server of a test), in the sandbox's work dir.
    pub fn serving(sandbox: &Sandbox, base_url: &str, args: &[&str]) -> AcpDriver {
        AcpDriver::serving_with(sandbox, base_url, args, &[])
    }

    /// [`AcpDriver::serving`] with these environment variables set too.
    pub fn serving_with(
        sandbox: &Sandbox,
        base_url: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> AcpDriver {
        let mut command: Command =
            sandbox.dsh(["--base-url", base_url, "--model", "mock-model", "acp"]);
        command
            .args(args)
            .env("DSH_API_KEY_ENV", "")
            .envs(envs.iter().copied());
        AcpDriver::spawn(command)
    }

    /// Spawns a prepared command with piped stdio.
    pub fn spawn(mut command: Command) -> AcpDriver {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("spawn dsh acp: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let stderr = child.stderr.take().unwrap_or_else(|| panic!("no stderr"));
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let (etx, stderr_lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if etx.send(line).is_err() {
                    return;
                }
            }
        });
        AcpDriver {
            stdin: child.stdin.take(),
            pid: child.id(),
            child: Some(child),
            lines,
            stderr: stderr_lines,
            transcript: Vec::new(),
            wire: Vec::new(),
            next_id: 1,
            policy: Policy::Allow,
            asked: Vec::new(),
            editor: None,
            usage: Vec::new(),
            commands: Vec::new(),
            titles: Vec::new(),
            stray: std::collections::VecDeque::new(),
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes raw bytes to dsh's stdin.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        for line in bytes.split(|b| *b == b'\n') {
            if let Ok(frame) = serde_json::from_slice::<Value>(line) {
                self.wire.push(Wire::Out(frame));
            }
        }
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(bytes).and_then(|()| stdin.flush());
        }
    }

    /// Writes one frame.
    pub fn send(&mut self, frame: &Value) {
        let mut line = frame.to_string();
        line.push('\n');
        self.write_raw(line.as_bytes());
    }

    /// Sends a request with a fresh integer id; returns the id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next stdout frame (answering permission requests by policy), or `None` at EOF.
    /// `available_commands_update`s, which come once a session is known and at no fixed
    /// point, are set apart in [`AcpDriver::commands`] rather than returned; likewise the
    /// `session_info_update`s in [`AcpDriver::titles`].
    pub fn next_frame(&mut self) -> Option<Value> {
        if let Some(frame) = self.stray.pop_front() {
            return Some(frame);
        }
        loop {
            let frame = self.next_raw_frame()?;
            match frame["params"]["update"]["sessionUpdate"].as_str() {
                Some("available_commands_update") => self.commands.push(frame),
                Some("session_info_update") => self.titles.push(frame),
                _ => return Some(frame),
            }
        }
    }

    /// The titles the session was given so far, in order.
    pub fn titles_of(&self, session: &str) -> Vec<String> {
        self.titles
            .iter()
            .filter(|f| f["params"]["sessionId"] == session)
            .filter_map(|f| f["params"]["update"]["title"].as_str().map(str::to_owned))
            .collect()
    }

    /// Reads frames until the session's commands were announced; returns the latest list.
    pub fn commands_of(&mut self, session: &str) -> Vec<Value> {
        loop {
            let found = self
                .commands
                .iter()
                .rev()
                .find(|f| f["params"]["sessionId"] == session)
                .map(|f| f["params"]["update"]["availableCommands"].clone());
            if let Some(Value::Array(list)) = found {
                return list;
            }
            let frame = self
                .next_raw_frame()
                .unwrap_or_else(|| panic!("stdout closed before the commands of {session}"));
            match frame["params"]["update"]["sessionUpdate"].as_str() {
                Some("available_commands_update") => self.commands.push(frame),
                Some("session_info_update") => self.titles.push(frame),
                _ => self.stray.push_back(frame),
            }
        }
    }

    fn next_raw_frame(&mut self) -> Option<Value> {
        let line = match self.lines.recv_timeout(STEP) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!(
                    "no frame within {STEP:?}; transcript: {:#?}",
                    self.transcript
                )
            }
        };
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        self.transcript.push(frame.clone());
        self.wire.push(Wire::In(frame.clone()));
        if frame["method"] == "session/request_permission" {
            self.asked.push(frame.clone());
            self.answer_permission(&frame);
        }
        if frame["method"]
            .as_str()
            .is_some_and(|m| m.starts_with("fs/"))
        {
            self.answer_fs(&frame);
        }
        Some(frame)
    }

    fn answer_fs(&mut self, frame: &Value) {
        let Some(editor) = self.editor.as_mut() else {
            return;
        };
        editor.calls.push(frame.clone());
        let id = frame["id"].clone();
        let path = std::path::PathBuf::from(frame["params"]["path"].as_str().unwrap_or_default());
        let answer = match frame["method"].as_str() {
            Some("fs/read_text_file") => match editor.buffers.get(&path) {
                Some(text) => json!({"jsonrpc": "2.0", "id": id, "result": {"content": text}}),
                None => match std::fs::read_to_string(&path) {
                    Ok(text) => json!({"jsonrpc": "2.0", "id": id, "result": {"content": text}}),
                    Err(_) => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32002, "message": "Resource not found"}}),
                },
            },
            Some("fs/write_text_file") if editor.fail_writes => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": "the buffer is read-only"}}),
            Some("fs/write_text_file") => {
                let content = frame["params"]["content"].as_str().unwrap_or_default();
                editor.buffers.insert(path, content.to_owned());
                json!({"jsonrpc": "2.0", "id": id, "result": null})
            }
            _ => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}}),
        };
        self.send(&answer);
    }

    fn answer_permission(&mut self, frame: &Value) {
        let id = frame["id"].clone();
        let selected = |option: &str| {
            json!({"jsonrpc": "2.0", "id": id, "result":
                {"outcome": {"outcome": "selected", "optionId": option}}})
        };
        let answer = match self.policy {
            Policy::Allow => selected("allow_once"),
            Policy::Always => selected("allow_always"),
            Policy::Reject => selected("reject_once"),
            Policy::Bogus => selected("no_such_option"),
            Policy::Dismiss => {
                json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}})
            }
            Policy::Error => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32603, "message": "the editor failed"}}),
            Policy::Hold => return,
        };
        self.send(&answer);
    }

    /// Reads frames until the response to `id`; returns it and the frames before it (usage
    /// updates included).
    pub fn response(&mut self, id: &Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let frame = self
                .next_frame()
                .unwrap_or_else(|| panic!("stdout closed before the response to {id}"));
            if frame.get("method").is_none() && &frame["id"] == id {
                return (frame, before);
            }
            before.push(frame);
        }
    }

    /// Reads frames until one satisfies `pred`; returns it.
    pub fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let frame = self
                .next_frame()
                .unwrap_or_else(|| panic!("stdout closed before {what}"));
            if pred(&frame) {
                return frame;
            }
        }
    }

    /// Reads frames until a session update carrying exactly `text`.
    pub fn until_text(&mut self, text: &str) -> Value {
        self.until(text, |f| f["params"]["update"]["content"]["text"] == text)
    }

    /// Reads frames until the first update of a given kind (`tool_call`, say).
    pub fn until_update(&mut self, kind: &str) -> Value {
        self.until(kind, |f| f["params"]["update"]["sessionUpdate"] == kind)
    }

    /// `initialize` (optionally with Zed's terminal-card flag); returns the result.
    pub fn initialize(&mut self, terminal_cards: bool) -> Value {
        let caps = if terminal_cards {
            json!({"_meta": {"terminal_output": true}})
        } else {
            json!({})
        };
        self.initialize_with(caps)
    }

    /// `initialize` with these client capabilities; returns the result.
    pub fn initialize_with(&mut self, caps: Value) -> Value {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": caps,
                   "clientInfo": {"name": "dsh-tests", "version": "1"}}),
        );
        let (response, _) = self.response(&id);
        response["result"].clone()
    }

    /// `session/new` in `cwd`; returns the session id.
    pub fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let (response, _) = self.response(&id);
        response["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {response}"))
            .to_owned()
    }

    /// Sends a text prompt; returns its request id.
    pub fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// A prompt to its response: `(response, updates of this session before it)`.
    pub fn prompt_to_end(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        let id = self.prompt(session, text);
        let (response, before) = self.response(&id);
        let (usage, updates): (Vec<Value>, Vec<Value>) = before
            .into_iter()
            .filter(|f| f["method"] == "session/update" && f["params"]["sessionId"] == session)
            .map(|f| f["params"]["update"].clone())
            .partition(is_usage);
        self.usage.extend(usage);
        (response, updates)
    }

    /// Closes stdin, reads what is left, and waits (bounded) for the exit; returns the exit
    /// code and the whole stderr.
    ///
    /// Letting the agent go always ends the same way: exit 0, and a teardown that left no
    /// agent and no live session behind.
    pub fn finish(mut self) -> (Option<i32>, String) {
        self.close_stdin();
        let (code, stderr) = self.wait_exit();
        check_invariants(&self.wire, true);
        assert_eq!(code, Some(0), "exit after stdin closed; stderr:\n{stderr}");
        assert!(
            stderr
                .lines()
                .any(|l| l.contains("teardown complete") && l.contains("agents=0 sessions=0")),
            "no clean teardown census on stderr:\n{stderr}"
        );
        (code, stderr)
    }

    /// Closes dsh's stdin, as an editor does when it lets the agent go.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The response to `id` in the transcript so far, if there is one.
    pub fn answered(&self, id: &Value) -> Option<&Value> {
        self.transcript
            .iter()
            .find(|f| f.get("method").is_none() && &f["id"] == id)
    }

    /// Waits for the process to exit on its own (after a signal, say).
    pub fn wait_exit(&mut self) -> (Option<i32>, String) {
        while self.next_frame_quiet().is_some() {}
        let mut child = self.child.take().unwrap_or_else(|| panic!("waited twice"));
        let (tx, exited) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let status = match exited.recv_timeout(STEP) {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => panic!("waiting for dsh acp: {e}"),
            Err(_) => {
                let _ = Command::new("kill")
                    .args(["-KILL", &self.pid.to_string()])
                    .status();
                panic!("dsh acp did not exit within {STEP:?}");
            }
        };
        let mut stderr = String::new();
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            stderr.push_str(&line);
            stderr.push('\n');
        }
        check_invariants(&self.wire, false);
        (status.code(), stderr)
    }

    fn next_frame_quiet(&mut self) -> Option<Value> {
        let line = self.lines.recv_timeout(STEP).ok()?;
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        self.transcript.push(frame.clone());
        self.wire.push(Wire::In(frame.clone()));
        Some(frame)
    }

    /// Sends a signal to dsh.
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.pid.to_string()])
            .status();
        assert!(status.is_ok_and(|s| s.success()), "kill -{name}");
    }
}
