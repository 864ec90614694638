//! Rendering a turn as it is recorded: a session observer that turns the events the agent
//! appends into a person's view (text as it arrives, reasoning dimmed, each bash call as
//! `$ <command>` with its output and `[exit N · S s]`) or into `--json` lines.
//!
//! Rendering from the session log, not from a side channel, means what is shown is exactly
//! what was stored, and `dsh sessions show` can reuse the same view.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_session::{Session, SessionEvent, SessionObserver};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How a run is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Text for people. `color`: SGR dimming of reasoning. `split`: stdout is not a terminal,
    /// so only the answer goes there and the rest to stderr.
    Human { color: bool, split: bool },
    /// One JSON object per line.
    Json,
}

#[derive(Default)]
struct State {
    in_reasoning: bool,
    /// Open calls: id → (the `tool/call` time, its name).
    calls: HashMap<String, (i64, String)>,
    steps: u32,
    input_tokens: u64,
    output_tokens: u64,
    cache_hit_tokens: u64,
    at_line_start: bool,
}

/// The observer. `closed` fires when stdout was closed under dsh.
pub struct Renderer {
    view: View,
    /// Replaying a stored transcript: prompts and turn ends are shown too.
    transcript: bool,
    state: Mutex<State>,
    pub stdout_closed: AtomicBool,
    pub closed: Notify,
}

impl Renderer {
    pub fn new(view: View) -> Arc<Renderer> {
        Renderer::build(view, false)
    }

    /// A renderer for a stored transcript (`dsh sessions show`).
    pub fn transcript(color: bool) -> Arc<Renderer> {
        Renderer::build(
            View::Human {
                color,
                split: false,
            },
            true,
        )
    }

    fn build(view: View, transcript: bool) -> Arc<Renderer> {
        Arc::new(Renderer {
            view,
            transcript,
            state: Mutex::new(State {
                at_line_start: true,
                ..State::default()
            }),
            stdout_closed: AtomicBool::new(false),
            closed: Notify::new(),
        })
    }

    /// `(steps, input tokens, output tokens, cache hits)` so far.
    pub fn totals(&self) -> (u32, u64, u64, u64) {
        let s = self.state.lock();
        (s.steps, s.input_tokens, s.output_tokens, s.cache_hit_tokens)
    }

    /// Writes to stdout; a closed stdout is remembered and announced once.
    pub fn out(&self, bytes: &[u8]) {
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .is_err()
        {
            self.stdout_closed.store(true, Ordering::SeqCst);
            self.closed.notify_one();
        }
    }

    fn side(&self, bytes: &[u8]) {
        match self.view {
            View::Human { split: true, .. } => {
                let _ = std::io::stderr().lock().write_all(bytes);
            }
            _ => self.out(bytes),
        }
    }

    /// Prints one `--json` line.
    pub fn json_line(&self, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        self.out(line.as_bytes());
    }

    fn end_reasoning(&self, state: &mut State, color: bool) {
        if state.in_reasoning {
            state.in_reasoning = false;
            if color {
                self.side(b"\x1b[0m\n");
            } else {
                self.side(b"\n[/reasoning]\n");
            }
            state.at_line_start = true;
        }
    }

    fn human(&self, event: &SessionEvent, data: &Value, color: bool) {
        let mut state = self.state.lock();
        match event.kind.as_str() {
            "assistant/chunk" => {
                if let Some(text) = data["chunk"]["reasoning_delta"].as_str() {
                    if !state.in_reasoning {
                        state.in_reasoning = true;
                        if !state.at_line_start {
                            self.side(b"\n");
                        }
                        self.side(if color { b"\x1b[2m" } else { b"[reasoning]\n" });
                    }
                    self.side(text.as_bytes());
                    state.at_line_start = text.ends_with('\n');
                } else if let Some(text) = data["chunk"]["text_delta"].as_str() {
                    self.end_reasoning(&mut state, color);
                    self.out(text.as_bytes());
                    state.at_line_start = text.ends_with('\n');
                }
            }
            "assistant/message" => {
                self.end_reasoning(&mut state, color);
                self.count_usage(&mut state, data);
                if !state.at_line_start {
                    self.out(b"\n");
                    state.at_line_start = true;
                }
            }
            "tool/call" => {
                self.end_reasoning(&mut state, color);
                let name = data["name"].as_str().unwrap_or("?").to_owned();
                let arguments = data["arguments"].as_str().unwrap_or("");
                let line = match serde_json::from_str::<Value>(arguments) {
                    Ok(args) if name == "bash" => {
                        format!("$ {}\n", args["command"].as_str().unwrap_or(arguments))
                    }
                    _ => format!("▸ {name} {arguments}\n"),
                };
                self.side(line.as_bytes());
                if let Some(id) = data["call_id"].as_str() {
                    state.calls.insert(id.to_owned(), (event.time, name));
                }
            }
            "tool/result" => {
                let started = data["call_id"]
                    .as_str()
                    .and_then(|id| state.calls.remove(id))
                    .map(|(time, _)| time);
                let text = tool_result_text(data, started.map(|t| event.time - t));
                self.side(text.as_bytes());
            }
            "user/message" if self.transcript => {
                self.end_reasoning(&mut state, color);
                let prompt = data["message"]["text"].as_str().unwrap_or("");
                self.out(format!("› {prompt}\n").as_bytes());
                state.at_line_start = true;
            }
            "turn/end" if self.transcript => {
                self.end_reasoning(&mut state, color);
                if !state.at_line_start {
                    self.out(b"\n");
                }
                let kind = data["reason"]["kind"].as_str().unwrap_or("ended");
                let line = match kind {
                    "error" => format!(
                        "[error: {}]\n",
                        data["reason"]["failure"]["message"].as_str().unwrap_or("?")
                    ),
                    other => format!("[{}]\n", other.replace('_', " ")),
                };
                self.out(line.as_bytes());
                state.at_line_start = true;
            }
            _ => {}
        }
    }

    /// Renders one stored event, as the live observer would have.
    pub fn replay(&self, event: &SessionEvent) {
        let Ok(data) = serde_json::from_str::<Value>(event.data.get()) else {
            return;
        };
        match self.view {
            View::Human { color, .. } => self.human(event, &data, color),
            View::Json => self.json(event, &data),
        }
    }

    fn count_usage(&self, state: &mut State, data: &Value) {
        state.steps += 1;
        let usage = &data["usage"];
        state.input_tokens += usage["input_tokens"].as_u64().unwrap_or(0);
        state.output_tokens += usage["output_tokens"].as_u64().unwrap_or(0);
        state.cache_hit_tokens += usage["cache_hit_tokens"].as_u64().unwrap_or(0);
    }

    fn json(&self, event: &SessionEvent, data: &Value) {
        let line = match event.kind.as_str() {
            "turn/start" => json!({"type": "turn_start", "turn": data["turn"]}),
            "assistant/chunk" => {
                if let Some(text) = data["chunk"]["reasoning_delta"].as_str() {
                    json!({"type": "reasoning", "text": text})
                } else if let Some(text) = data["chunk"]["text_delta"].as_str() {
                    json!({"type": "text", "text": text})
                } else {
                    return;
                }
            }
            "assistant/message" => {
                let mut state = self.state.lock();
                self.count_usage(&mut state, data);
                let usage = &data["usage"];
                if !usage.is_null() {
                    self.json_line(&json!({
                        "type": "usage",
                        "step": data["step"],
                        "input_tokens": usage["input_tokens"],
                        "output_tokens": usage["output_tokens"],
                        "cache_hit_tokens": usage["cache_hit_tokens"],
                        "cache_miss_tokens": usage["cache_miss_tokens"],
                        "reasoning_tokens": usage["reasoning_tokens"],
                    }));
                }
                json!({"type": "message", "step": data["step"], "text": data["message"]["content"]})
            }
            "tool/call" => json!({
                "type": "tool_call",
                "call_id": data["call_id"],
                "name": data["name"],
                "arguments": data["arguments"],
                "title": Value::Null,
            }),
            "tool/result" => {
                let mut line = json!({
                    "type": "tool_result",
                    "call_id": data["call_id"],
                    "name": data["name"],
                    "is_error": data["is_error"],
                    "output": data["content"],
                });
                if let Some(code) = data.get("error_code") {
                    line["error_code"] = code.clone();
                }
                if let Some(code) = data.get("meta").and_then(|m| m.get("exit_code")) {
                    line["exit_code"] = code.clone();
                }
                line
            }
            _ => return,
        };
        self.json_line(&line);
    }
}

/// A result as shown under its `$ command` line: the output without the tool's own status
/// line (when it has structured metadata), then `[exit N · S s]`, `[killed]` or `[error: …]`.
fn tool_result_text(data: &Value, elapsed_ms: Option<i64>) -> String {
    let content = data["content"].as_str().unwrap_or("");
    let meta = data.get("meta").filter(|m| m.is_object());
    if data["is_error"].as_bool() == Some(true) {
        let message = content.lines().last().unwrap_or(content);
        return format!("[error: {message}]\n");
    }
    let Some(meta) = meta else {
        let mut text = content.to_owned();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    };
    let body = match content.rfind("\n[") {
        Some(at)
            if content[at + 1..].starts_with("[exit code")
                || content[at + 1..].starts_with("[killed")
                || content[at + 1..].starts_with("[timed out") =>
        {
            &content[..at]
        }
        _ => content,
    };
    let mut text = String::new();
    if body != "(no output)" {
        text.push_str(body);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let secs = elapsed_ms.map_or(0.0, |ms| ms.max(0) as f64 / 1000.0);
    match (meta["exit_code"].as_i64(), meta["signal"].as_str()) {
        (Some(code), _) => text.push_str(&format!("[exit {code} · {secs:.1} s]\n")),
        (None, Some(_)) => text.push_str("[killed]\n"),
        (None, None) => {}
    }
    text
}

#[async_trait]
impl SessionObserver for Renderer {
    fn name(&self) -> &str {
        "dsh-run-renderer"
    }

    fn on_append(&self, _session: &Session, event: &Arc<SessionEvent>) {
        self.replay(event);
    }
}
