//! Rendering a turn as it is recorded: a session observer that turns the events the agent
//! appends into a person's view (text as it arrives, reasoning dimmed, each bash call as
//! `$ <command>` with its output and `[exit N · S s]`) or into `--json` lines.
//!
//! Rendering from the session log, not from a side channel, means what is shown is exactly
//! what was stored, and `dsh sessions show` can reuse the same view.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_agent::TurnEndReason;
use dsh_agent::record::{
    AssistantChunkRecord, Chunk, CompactTrigger, ContextUsage, ModelProgressRecord, PlanEntry,
    PlanStatus, Record, ToolProgressRecord, ToolResultRecord,
};
use dsh_session::{Ephemeral, Session, SessionEvent, SessionObserver};
use dsh_tools::Plan;
use dsh_tools::safe_text::SafeText;
use dsh_tools::words::count;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::status::{StatusLine, Stream};
use crate::tally::Tally;

/// How a run is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Text for people. `color`: SGR dimming of reasoning. `split`: stdout is not a terminal,
    /// so only the answer goes there and the rest to stderr.
    Human { color: bool, split: bool },
    /// One JSON object per line.
    Json,
}

struct State {
    in_reasoning: bool,
    /// Open calls: id → (the `tool/call` time, its name).
    calls: HashMap<String, (i64, String)>,
    tally: Tally,
    at_line_start: bool,
    /// The model's answer and reasoning arrive in pieces that may split an escape sequence:
    /// each stream has its own filter.
    text: SafeText,
    reasoning: SafeText,
    /// Calls whose output is being shown as it arrives.
    live: HashMap<String, LiveCall>,
    /// Calls waiting for the user's answer: their line, and the command for the spinner,
    /// shown only once they are allowed.
    asked: HashMap<String, (String, Option<String>)>,
    /// Calls allowed after a question that showed their change (an edit's diff).
    previewed: std::collections::HashSet<String>,
}

/// A running call whose output is on the screen.
struct LiveCall {
    filter: SafeText,
    shown: usize,
    /// The live view stopped at [`LIVE_LIMIT`]; the result is shown whole at the end.
    cut: bool,
    ends_line: bool,
    /// The last piece ended with a carriage return: the next decides whether it was a line
    /// end (`\r\n`) or a return to the line's start (a progress counter).
    pending_return: bool,
}

/// How much of one call's output is shown while it runs; the result (its head and tail) is
/// shown when it ends if the command printed more.
const LIVE_LIMIT: usize = 64 * 1024;

impl Default for State {
    fn default() -> State {
        State {
            in_reasoning: false,
            calls: HashMap::new(),
            tally: Tally::default(),
            previewed: std::collections::HashSet::new(),
            at_line_start: true,
            text: SafeText::new(false),
            reasoning: SafeText::new(false),
            live: HashMap::new(),
            asked: HashMap::new(),
        }
    }
}

/// The observer. `closed` fires when stdout was closed under dsh.
pub struct Renderer {
    view: View,
    /// Replaying a stored transcript: prompts and turn ends are shown too.
    transcript: bool,
    /// `--permission ask`: a bash call is shown in its question first, and as running only
    /// once the user allowed it.
    asks: AtomicBool,
    state: Mutex<State>,
    pub stdout_closed: AtomicBool,
    pub closed: Notify,
    /// The terminal's status line: what the run waits for (the model, a command) with its
    /// elapsed time, or a retry notice; every write passes through it.
    status: Arc<StatusLine>,
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
        // Status lines are drawn and redrawn in place only for a person watching a run: a
        // human view, stderr on a terminal that is not `dumb`, and not a stored transcript.
        let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let in_place = matches!(view, View::Human { .. })
            && !transcript
            && !dumb
            && std::io::stderr().is_terminal();
        Arc::new(Renderer {
            view,
            transcript,
            state: Mutex::new(State::default()),
            stdout_closed: AtomicBool::new(false),
            closed: Notify::new(),
            status: StatusLine::new(in_place, crate::output::is_terminal()),
            asks: AtomicBool::new(false),
        })
    }

    /// The agent's context window, for a compaction shown before any model call.
    pub fn set_window(&self, window: u64) {
        self.state.lock().tally.window = Some(window);
    }

    /// The model's prices, for the footer's cost.
    pub fn set_prices(&self, prices: Option<dsh_llm::Prices>) {
        self.state.lock().tally.prices = prices;
    }

    /// What the run's model calls used so far.
    pub fn totals(&self) -> Tally {
        self.state.lock().tally.clone()
    }

    /// Shows a passing state of the run (`server busy (HTTP 429) — retrying in 3 s …`): on a
    /// terminal one line on stderr that the next one replaces and the next output clears;
    /// elsewhere a plain line.
    pub fn notice(&self, line: &str) {
        let line = format!("dsh · {}", SafeText::plain(line));
        if self.status.enabled() {
            self.status.say(&line);
        } else {
            let _ = self
                .status
                .write(Stream::Stderr, format!("{line}\n").as_bytes());
        }
    }

    /// Says `line` (dsh's own words, safe to show) on stderr, on a line of its own: the
    /// status comes off first and goes back after.
    pub fn interject(&self, line: &str) {
        self.status.break_line();
        let _ = self
            .status
            .write(Stream::Stderr, format!("{line}\n").as_bytes());
    }

    /// Shows bash calls as running only once [`Renderer::allowed`] says so.
    pub fn asking(&self) {
        self.asks.store(true, Ordering::SeqCst);
    }

    /// The user allowed call `call_id`: it is shown as running now, and its time counts from
    /// now (not from before the question).
    pub fn allowed(&self, call_id: &str) {
        let (waiting, name) = {
            let mut state = self.state.lock();
            if let Some((started, _)) = state.calls.get_mut(call_id) {
                *started = now_ms();
            }
            let waiting = state.asked.remove(call_id);
            if waiting.is_none() {
                // Its question showed what it changes: the result need not again.
                state.previewed.insert(call_id.to_owned());
            }
            let name = state.calls.get(call_id).map(|(_, name)| name.clone());
            (waiting, name)
        };
        match (waiting, name) {
            (Some((line, command)), _) => {
                self.side(line.as_bytes());
                if let Some(command) = command {
                    self.spin(&format!("$ {command}"));
                }
            }
            // Its spinner went for the question; it runs now.
            (None, Some(name)) if spins(&name) => {
                self.spin(&format!("▸ {}", SafeText::plain(&name)))
            }
            (None, _) => {}
        }
    }

    /// Starts the spinner of what the run waits for: `label` (already safe to show) is
    /// `$ command` for a command, `▸ tool` for another tool, or what the model is doing.
    fn spin(&self, label: &str) {
        self.status.spin(&first_line(label));
    }

    /// Removes the status (a spinner, a notice) from the terminal before something else is
    /// said there: a question, the end of the run.
    pub fn stop_spinner(&self) {
        self.status.hide();
        self.status.break_line();
    }

    /// Writes to stdout; a closed stdout is remembered and announced once.
    pub fn out(&self, bytes: &[u8]) {
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        if self.status.write(Stream::Stdout, bytes).is_err() {
            self.stdout_closed.store(true, Ordering::SeqCst);
            self.closed.notify_one();
        }
    }

    fn side(&self, bytes: &[u8]) {
        match self.view {
            View::Human { split: true, .. } => {
                let _ = self.status.write(Stream::Stderr, bytes);
            }
            View::Human { split: false, .. } | View::Json => self.out(bytes),
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

    fn human(&self, event: &SessionEvent, record: Record, color: bool) {
        let mut state = self.state.lock();
        match record {
            Record::AssistantChunk(AssistantChunkRecord {
                chunk: Chunk::ReasoningDelta(text),
                ..
            }) => {
                // The model's own words say it is working.
                self.status.hide();
                if !state.in_reasoning {
                    state.in_reasoning = true;
                    if !state.at_line_start {
                        self.side(b"\n");
                    }
                    self.side(if color { b"\x1b[2m" } else { b"[reasoning]\n" });
                }
                let text = state.reasoning.push(text.as_bytes());
                self.side(text.as_bytes());
                if !text.is_empty() {
                    state.at_line_start = text.ends_with('\n');
                }
            }
            Record::AssistantChunk(AssistantChunkRecord {
                chunk: Chunk::TextDelta(text),
                ..
            }) => {
                self.status.hide();
                self.end_reasoning(&mut state, color);
                let text = state.text.push(text.as_bytes());
                self.out(text.as_bytes());
                if !text.is_empty() {
                    state.at_line_start = text.ends_with('\n');
                }
            }
            Record::AssistantMessage(answer) => {
                self.status.hide();
                self.end_reasoning(&mut state, color);
                // The streams are plain text (no colour kept), so ending them emits nothing.
                state.text.finish();
                state.reasoning.finish();
                state.tally.count(&answer);
                if !state.at_line_start {
                    self.out(b"\n");
                    state.at_line_start = true;
                }
            }
            Record::ToolCall(call) => {
                self.status.hide();
                self.end_reasoning(&mut state, color);
                // The model chose the name: it is shown only made safe.
                let name = SafeText::plain(&call.name);
                let (line, command) = match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(args) if call.name == "bash" => {
                        let command =
                            SafeText::plain(args["command"].as_str().unwrap_or(&call.arguments));
                        // The model's own words for the command, beside it.
                        let about = args["description"]
                            .as_str()
                            .map(SafeText::plain)
                            .filter(|d| !d.trim().is_empty())
                            .map(|d| match color {
                                true => format!("  \x1b[2m# {}\x1b[0m", d.trim()),
                                false => format!("  # {}", d.trim()),
                            })
                            .unwrap_or_default();
                        let line = match color {
                            true => format!("\x1b[1;36m$\x1b[0m \x1b[1m{command}\x1b[0m{about}\n"),
                            false => format!("$ {command}{about}\n"),
                        };
                        (line, Some(command))
                    }
                    Ok(args) if FILE_TOOLS.contains(&call.name.as_str()) => {
                        let what = match (args["path"].as_str(), args["pattern"].as_str()) {
                            (_, Some(pattern)) => match args["path"].as_str() {
                                Some(path) => format!("{pattern} in {path}"),
                                None => pattern.to_owned(),
                            },
                            (Some(path), None) => path.to_owned(),
                            (None, None) => call.arguments.clone(),
                        };
                        let what = SafeText::plain(&what);
                        let line = match color {
                            true => format!("\x1b[1;36m▸\x1b[0m {name} \x1b[1m{what}\x1b[0m\n"),
                            false => format!("▸ {name} {what}\n"),
                        };
                        (line, None)
                    }
                    // The plan is shown whole when it is recorded, right after the result.
                    Ok(_) if call.name == PLAN_TOOL => (String::new(), None),
                    _ => (
                        format!("▸ {name} {}\n", SafeText::plain(&call.arguments)),
                        None,
                    ),
                };
                if command.is_some() && self.asks.load(Ordering::SeqCst) && !self.transcript {
                    // Its question shows it; it is echoed as running after a yes.
                    state.asked.insert(call.call_id.clone(), (line, command));
                } else {
                    self.side(line.as_bytes());
                    match command {
                        Some(command) => self.spin(&format!("$ {command}")),
                        None if spins(&call.name) => self.spin(&format!("▸ {name}")),
                        None => {}
                    }
                }
                state.calls.insert(call.call_id, (event.time, call.name));
            }
            // A plan's result: the plan record that follows shows it, once.
            Record::ToolResult(result)
                if !result.is_error && Plan::of(result.meta.as_ref()).is_some() =>
            {
                self.status.hide();
                state.calls.remove(&result.call_id);
            }
            Record::ToolResult(result) => {
                self.status.hide();
                // Declined or cancelled before an answer: it never ran, and its ending says so.
                state.asked.remove(&result.call_id);
                let started = state.calls.remove(&result.call_id).map(|(time, _)| time);
                let live = state.live.remove(&result.call_id);
                let mut text = String::new();
                // A plan that was refused: its call was not shown, its failure says whose.
                if result.name == PLAN_TOOL {
                    text.push_str("▸ todo\n");
                }
                let shown_live = match live {
                    Some(mut live) => {
                        text.push_str(&live.filter.finish());
                        if !live.ends_line {
                            text.push('\n');
                        }
                        !live.cut
                    }
                    None => false,
                };
                let previewed = state.previewed.remove(&result.call_id);
                let shown_lines = (!self.transcript).then_some(crate::excerpt::SHOWN_LINES);
                let (body, ending) = match result.meta.as_ref().filter(|_| previewed) {
                    Some(meta) => match crate::change::summary(meta, color) {
                        Some(line) => (String::new(), Ending::Change(line)),
                        None => tool_result_text(
                            &result,
                            started.map(|t| event.time - t),
                            shown_live,
                            shown_lines,
                            color,
                        ),
                    },
                    None => tool_result_text(
                        &result,
                        started.map(|t| event.time - t),
                        shown_live,
                        shown_lines,
                        color,
                    ),
                };
                text.push_str(&body);
                let mut text = if color {
                    SafeText::coloured(&text)
                } else {
                    SafeText::plain(&text)
                };
                // dsh's own line, styled after the output was made safe (it filters the
                // tool's words it quotes itself).
                text.push_str(&ending.line(color));
                self.side(text.as_bytes());
            }
            Record::UserMessage(user) if self.transcript => {
                self.end_reasoning(&mut state, color);
                self.out(format!("› {}\n", SafeText::plain(&user.message.text)).as_bytes());
                state.at_line_start = true;
            }
            Record::TurnEnd(end) if self.transcript => {
                self.end_reasoning(&mut state, color);
                if !state.at_line_start {
                    self.out(b"\n");
                }
                let line = match &end.reason {
                    TurnEndReason::Error { failure } => {
                        format!("[error: {}]\n", SafeText::plain(&failure.message))
                    }
                    TurnEndReason::Unknown => "[ended]\n".to_owned(),
                    other => format!("[{}]\n", other.kind().replace('_', " ")),
                };
                self.out(line.as_bytes());
                state.at_line_start = true;
            }
            Record::Instructions(context) if !self.transcript => {
                warn(&context.warnings);
                warn(&too_big(&context.text, state.tally.window));
            }
            // The transcript keeps everything: the mark says where the model's history starts
            // again from a summary.
            Record::Compacted(compacted) => {
                state.tally.compacted(&compacted);
                self.end_reasoning(&mut state, color);
                let why = match compacted.trigger {
                    CompactTrigger::Auto => "auto",
                    CompactTrigger::Manual => "asked for",
                    CompactTrigger::Overflow => "the server refused a long request",
                };
                // An overflow at a session's first call has no count to give.
                let size = match compacted.tokens_before {
                    0 => String::new(),
                    n => format!(" of {n} tokens"),
                };
                let line = format!(
                    "[context compacted ({why}): the model continues from a summary{size} of the conversation]\n"
                );
                let line = match color {
                    true => format!("\x1b[2m{}\x1b[0m", line.trim_end()) + "\n",
                    false => line,
                };
                self.side(line.as_bytes());
            }
            // The plan, whole, each time the model changes it.
            Record::Plan(plan) => {
                self.end_reasoning(&mut state, color);
                let text = plan_lines(&plan.entries, color);
                self.side(text.as_bytes());
            }
            // Nothing moves on the screen while the model reads the request and thinks.
            Record::StepStart(_) if !self.transcript => self.spin("waiting for the model"),
            Record::UserMessage(_)
            | Record::TurnEnd(_)
            | Record::TurnStart(_)
            | Record::StepStart(_)
            | Record::StepEnd(_)
            | Record::Instructions(_)
            | Record::Title(_)
            | Record::ConfigChanged(_)
            | Record::Other => {}
        }
    }

    /// The model streams tool calls, which show nothing else: the status says how far.
    fn model_progress(&self, progress: &ModelProgressRecord) {
        match self.view {
            View::Human { .. } => {
                let calls = count(progress.tool_calls as usize, "tool call", "tool calls");
                let size = kilobytes(progress.argument_bytes);
                self.status.relabel(&format!(
                    "the model is writing {calls} · {size} · latest: {}",
                    SafeText::plain(&progress.tool)
                ));
            }
            View::Json => self.json_line(&json!({
                "type": "progress",
                "step": progress.step,
                "tool_calls": progress.tool_calls,
                "argument_bytes": progress.argument_bytes,
                "tool": progress.tool,
            })),
        }
    }

    /// Shows a running call's output as it arrives (human views only: `--json` reports the
    /// result, which is what the model sees).
    fn progress(&self, piece: ToolProgressRecord) {
        let View::Human { color, .. } = self.view else {
            return;
        };
        let mut state = self.state.lock();
        let live = state.live.entry(piece.call_id).or_insert_with(|| LiveCall {
            filter: SafeText::new(color),
            shown: 0,
            cut: false,
            ends_line: true,
            pending_return: false,
        });
        if live.cut {
            return;
        }
        let in_place = self.status.enabled();
        let mut text = returns(live, &piece.output, in_place);
        if live.shown + text.len() > LIVE_LIMIT {
            let mut keep = LIVE_LIMIT.saturating_sub(live.shown);
            while !text.is_char_boundary(keep) {
                keep -= 1;
            }
            // Never inside dsh's own erase-line sequence.
            if let Some(esc) = text[..keep].rfind('\x1b')
                && keep - esc < "\x1b[2K".len()
            {
                keep = esc;
            }
            text.truncate(keep);
            text.push_str(&live.filter.finish());
            text.push_str("\n[… more output; shown when the command ends …]\n");
            live.cut = true;
        }
        live.shown += text.len();
        if !text.is_empty() {
            live.ends_line = text.ends_with('\n');
        }
        drop(state);
        // A line the command has not ended (a progress counter) keeps the status off until
        // it does: the command's own output says enough.
        self.side(text.as_bytes());
    }

    /// Renders one stored event, as the live observer would have.
    pub fn replay(&self, event: &SessionEvent) {
        let record = match Record::decode(event) {
            Ok(record) => record,
            Err(err) => {
                tracing::warn!("not shown: {err}");
                return;
            }
        };
        match self.view {
            View::Human { color, .. } => self.human(event, record, color),
            View::Json => self.json(record),
        }
    }

    fn json(&self, record: Record) {
        let line = match record {
            Record::TurnStart(start) => json!({"type": "turn_start", "turn": start.turn}),
            Record::AssistantChunk(AssistantChunkRecord { chunk, .. }) => match chunk {
                Chunk::ReasoningDelta(text) => json!({"type": "reasoning", "text": text}),
                Chunk::TextDelta(text) => json!({"type": "text", "text": text}),
            },
            Record::AssistantMessage(answer) => {
                let mut state = self.state.lock();
                state.tally.count(&answer);
                // One line a finished call: its usage, or that the server gave none.
                if answer.usage.is_some() || answer.context.is_some() {
                    self.json_line(&Tally::json_line(&answer));
                }
                json!({"type": "message", "step": answer.step, "text": answer.message.content})
            }
            Record::ToolCall(call) => json!({
                "type": "tool_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
                "title": Value::Null,
            }),
            Record::ToolResult(result) => {
                let mut line = json!({
                    "type": "tool_result",
                    "call_id": result.call_id,
                    "name": result.name,
                    "is_error": result.is_error,
                    "output": result.content,
                });
                if let Some(code) = &result.error_code {
                    line["error_code"] = json!(code);
                }
                if let Some(code) = result.meta.as_ref().and_then(|m| m.get("exit_code")) {
                    line["exit_code"] = code.clone();
                }
                line
            }
            Record::TurnEnd(_)
            | Record::StepStart(_)
            | Record::StepEnd(_)
            | Record::UserMessage(_)
            | Record::Title(_)
            | Record::ConfigChanged(_)
            | Record::Other => return,
            Record::Compacted(compacted) => {
                self.state.lock().tally.compacted(&compacted);
                json!({
                "type": "compacted",
                "trigger": compacted.trigger,
                "tokens_before": compacted.tokens_before,
                "tokens_after": compacted.tokens_after,
                "input_tokens": compacted.usage.as_ref().map(|u| u.input_tokens),
                "output_tokens": compacted.usage.as_ref().map(|u| u.output_tokens),
                "summary": compacted.summary,
                "files_read": compacted.files_read,
                "files_modified": compacted.files_modified,
                })
            }
            Record::Instructions(context) => {
                warn(&context.warnings);
                warn(&too_big(&context.text, self.state.lock().tally.window));
                return;
            }
            Record::Plan(plan) => json!({
                "type": "plan",
                "step": plan.step,
                "entries": plan.entries,
            }),
        };
        self.json_line(&line);
    }
}

/// A plan as the terminal shows it: a head line, then a step a line, the one in progress
/// marked (and bold, in colour), the completed ones dimmed.
fn plan_lines(entries: &[PlanEntry], color: bool) -> String {
    let done = entries
        .iter()
        .filter(|e| e.status == PlanStatus::Completed)
        .count();
    let mut text = format!("plan ({done} of {} done)\n", entries.len());
    for entry in entries {
        let content = SafeText::plain(&entry.content);
        let line = match (entry.status, color) {
            (PlanStatus::Pending, _) => format!("  [ ] {content}"),
            (PlanStatus::InProgress, false) => format!("  [>] {content}"),
            (PlanStatus::InProgress, true) => format!("  \x1b[1m[>] {content}\x1b[0m"),
            (PlanStatus::Completed, false) => format!("  [x] {content}"),
            (PlanStatus::Completed, true) => format!("  \x1b[2m[x] {content}\x1b[0m"),
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// A piece of a command's output made safe, with its carriage returns kept as what they
/// mean: `\r\n` ends a line, and a lone `\r` (pip's, cargo's, curl's progress) goes back to
/// the start of the line — on a terminal dsh erases the line for the next state (its own
/// sequence, never the command's), elsewhere each state gets a line of its own.
fn returns(live: &mut LiveCall, piece: &str, in_place: bool) -> String {
    let mut text = String::new();
    let mut rest = piece;
    if std::mem::take(&mut live.pending_return) && !rest.starts_with('\n') {
        text.push_str(if in_place { "\r\x1b[2K" } else { "\n" });
    }
    while let Some(at) = rest.find('\r') {
        text.push_str(&live.filter.push(&rest.as_bytes()[..at]));
        rest = &rest[at + 1..];
        if rest.is_empty() {
            live.pending_return = true;
        } else if !rest.starts_with('\n') {
            text.push_str(if in_place { "\r\x1b[2K" } else { "\n" });
        }
    }
    text.push_str(&live.filter.push(rest.as_bytes()));
    text
}

/// How a call ended, as its last line shows it.
#[derive(Debug, PartialEq)]
enum Ending {
    Exit {
        code: i64,
        secs: f64,
    },
    TimedOut {
        secs: f64,
    },
    Killed {
        signal: String,
        secs: f64,
    },
    /// The tool's own bracketed last line (`[cancelled by the user after 5.2 s; …]`).
    Said(String),
    Error(String),
    /// A file tool's summary and diff, already safe for the terminal.
    Change(String),
    /// A tool without structured metadata: its text says it all.
    Nothing,
}

impl Ending {
    /// The line, styled when `color`: failures red, a clean exit dim. What it quotes of the
    /// tool's text is made safe first.
    fn line(&self, color: bool) -> String {
        let (text, style) = match self {
            Ending::Exit { code: 0, secs } => (format!("[exit 0 · {secs:.1} s]"), "2"),
            Ending::Exit { code, secs } => (format!("[exit {code} · {secs:.1} s]"), "31"),
            Ending::TimedOut { secs } => (format!("[timed out after {secs:.0} s]"), "31"),
            Ending::Killed { signal, secs } => {
                (format!("[killed by {signal} · {secs:.1} s]"), "31")
            }
            Ending::Said(line) => (SafeText::plain(line), "33"),
            Ending::Error(message) => (format!("[error: {}]", SafeText::plain(message)), "31"),
            Ending::Change(text) => return text.clone(),
            Ending::Nothing => return String::new(),
        };
        if color {
            format!("\x1b[{style}m{text}\x1b[0m\n")
        } else {
            format!("{text}\n")
        }
    }
}

/// Whether a tool other than bash shows the spinner while it runs: one with no output until
/// it answers (an MCP server's, which may take a while); a file tool or the plan answers at
/// once.
fn spins(tool: &str) -> bool {
    tool != "bash" && tool != PLAN_TOOL && !FILE_TOOLS.contains(&tool)
}

/// The tool whose calls are shown as the plan they record.
const PLAN_TOOL: &str = "todo";

/// A result as shown under its `$ command` line: the output (unless it was shown live),
/// without the tool's own status line when it has structured metadata, and how it ended.
/// The tools whose calls are shown as `▸ name path` rather than with their raw arguments.
const FILE_TOOLS: [&str; 5] = ["read", "edit", "write", "grep", "glob"];

fn tool_result_text(
    result: &ToolResultRecord,
    elapsed_ms: Option<i64>,
    shown_live: bool,
    shown_lines: Option<usize>,
    color: bool,
) -> (String, Ending) {
    let content = result.content.as_str();
    let meta = result.meta.as_ref().filter(|m| m.is_object());
    if result.is_error {
        let message = content.lines().last().unwrap_or(content);
        // A tool's own bracketed ending is shown as it is, after the output it ends when
        // that was not on the screen already.
        if message.starts_with('[') && message.ends_with(']') {
            let mut body = String::new();
            if !shown_live && content.len() > message.len() {
                body.push_str(&content[..content.len() - message.len()]);
            }
            return (body, Ending::Said(message.to_owned()));
        }
        return (String::new(), Ending::Error(message.to_owned()));
    }
    if let Some(change) = meta.and_then(|m| crate::change::shown(m, color)) {
        return (String::new(), Ending::Change(change));
    }
    let Some(meta) = meta else {
        // A live run shows the head of a long plain-text result (an MCP server's, say); a
        // stored transcript shows it all.
        let Some(lines) = shown_lines else {
            let mut text = content.to_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            return (text, Ending::Nothing);
        };
        let (text, left) = crate::excerpt::head(content, lines);
        return match left {
            0 => (text, Ending::Nothing),
            left => (
                text,
                Ending::Said(format!("[… {left} more lines not shown]")),
            ),
        };
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
    if body != "(no output)" && !shown_live {
        text.push_str(body);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let secs = elapsed_ms.map_or(0.0, |ms| ms.max(0) as f64 / 1000.0);
    let ending = match (meta["exit_code"].as_i64(), meta["signal"].as_str()) {
        _ if meta["timed_out"].as_bool() == Some(true) => Ending::TimedOut { secs },
        (Some(code), _) => Ending::Exit { code, secs },
        (None, Some(signal)) => Ending::Killed {
            signal: signal.to_owned(),
            secs,
        },
        (None, None) => Ending::Nothing,
    };
    (text, ending)
}

#[async_trait]
impl SessionObserver for Renderer {
    fn name(&self) -> &str {
        "dsh-run-renderer"
    }

    fn on_append(&self, _session: &Session, event: &Arc<SessionEvent>) {
        self.replay(event);
    }

    fn on_ephemeral(&self, _session: &Session, note: &Ephemeral) {
        if let Some(piece) = ToolProgressRecord::decode(note) {
            self.progress(piece);
        } else if let Some(progress) = ModelProgressRecord::decode(note) {
            self.model_progress(&progress);
        }
    }
}

/// A warning when the system message alone fills the context window: a window set too small
/// (a local model's default), which every request would overflow.
fn too_big(system: &str, window: Option<u64>) -> Vec<String> {
    let tokens = system.len() as u64 / ContextUsage::BYTES_PER_TOKEN;
    match window {
        Some(window) if tokens >= window => vec![format!(
            "the system message alone is ~{tokens} tokens, more than the context window of {window} tokens: set context_window (--context-window) to the model's real window"
        )],
        Some(_) | None => Vec::new(),
    }
}

/// What building the system message warned about (a skipped or cut instruction file): on
/// stderr in every view, since it is about dsh's input, not the model's answer.
fn warn(warnings: &[String]) {
    let mut err = std::io::stderr().lock();
    for warning in warnings {
        let _ = writeln!(err, "warning: {}", SafeText::plain(warning));
    }
}

/// `parts` joined with ` · `, broken before a part (never inside one) so that no line is
/// wider than `width` columns; a part wider than the line stands alone on its line.
pub fn fit(parts: &[String], width: Option<usize>) -> String {
    let Some(width) = width.filter(|w| *w >= 20) else {
        return parts.join(" · ");
    };
    let mut out = String::new();
    let mut line = 0usize;
    for (i, part) in parts.iter().enumerate() {
        let len = part.chars().count();
        if i > 0 {
            if line + 3 + len > width {
                out.push_str("\n  ");
                line = 2;
            } else {
                out.push_str(" · ");
                line += 3;
            }
        }
        out.push_str(part);
        line += len;
    }
    out
}

/// The width of the terminal stderr is, when it is one.
pub fn stderr_width() -> Option<usize> {
    console::Term::stderr()
        .size_checked()
        .map(|(_, cols)| usize::from(cols))
}

/// The first line of `label`, cut to 62 characters with an ellipsis when anything was left
/// out.
fn first_line(label: &str) -> String {
    let first = label.lines().next().unwrap_or_default();
    let mut shown: String = first.chars().take(62).collect();
    if shown.len() < label.trim_end().len() {
        shown.push('…');
    }
    shown
}

/// `n` bytes as people read them: `812 B`, `12.3 kB`, `1.2 MB`.
fn kilobytes(n: u64) -> String {
    match n {
        0..=999 => format!("{n} B"),
        1_000..=999_999 => format!("{:.1} kB", n as f64 / 1_000.0),
        _ => format!("{:.1} MB", n as f64 / 1_000_000.0),
    }
}

/// The time as the log stamps events: milliseconds since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod fit_tests {
    use super::fit;

    #[test]
    fn parts_wrap_between_never_inside() {
        let parts: Vec<String> = [
            "dsh",
            "completed",
            "3 steps",
            "saved: dsh sessions show 0123456789",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            fit(&parts, None),
            "dsh · completed · 3 steps · saved: dsh sessions show 0123456789"
        );
        let fitted = fit(&parts, Some(30));
        assert_eq!(
            fitted,
            "dsh · completed · 3 steps\n  saved: dsh sessions show 0123456789"
        );
        assert!(fitted.lines().next().unwrap().chars().count() <= 30);
    }
}

#[cfg(test)]
mod returns_tests {
    use super::*;

    fn live() -> LiveCall {
        LiveCall {
            filter: SafeText::new(false),
            shown: 0,
            cut: false,
            ends_line: true,
            pending_return: false,
        }
    }

    #[test]
    fn a_carriage_return_erases_the_line_on_a_terminal_and_breaks_it_elsewhere() {
        // (pieces, on a terminal, elsewhere)
        let cases: &[(&[&str], &str, &str)] = &[
            (&["a\r\n"], "a\n", "a\n"),
            (&["10%\r20%\r\n"], "10%\r\x1b[2K20%\n", "10%\n20%\n"),
            // A return at a piece's end waits for the next piece to say what it was.
            (&["a\r", "\nb"], "a\nb", "a\nb"),
            (&["10%\r", "20%"], "10%\r\x1b[2K20%", "10%\n20%"),
            // The command's own escape sequences are still removed.
            (&["x\x1b]2;t\x07\ry"], "x\r\x1b[2Ky", "x\ny"),
        ];
        for (pieces, terminal, elsewhere) in cases {
            for (in_place, want) in [(true, terminal), (false, elsewhere)] {
                let mut call = live();
                let got: String = pieces
                    .iter()
                    .map(|p| returns(&mut call, p, in_place))
                    .collect();
                assert_eq!(&got, want, "{pieces:?} in place: {in_place}");
            }
        }
    }
}
