//! View events as text for a person: the answer as it streams, reasoning dimmed, each call
//! as the tool presents it (`$ command` for a terminal, `▸ tool what` otherwise) with its
//! output and how it ended, the plan, compactions. What is said goes back to the renderer as
//! [`Said`], which owns the streams and the status line.

use std::collections::{HashMap, HashSet};

use dsh_agent::record::{CompactTrigger, PlanEntry, PlanStatus};
use dsh_session::TurnEndReason;
use dsh_tools::safe_text::SafeText;
use dsh_tools::words::count;
use dsh_tools::{TerminalExit, ToolKindHint, ToolResultView};
use dsh_view::{Card, CardEnd, Closed, Compaction, Look, Shown, ViewEvent};

use super::ending::Ending;
use super::live::LiveCall;

/// What to do with the terminal, in order.
pub enum Said {
    /// Write to stdout (the answer).
    Out(String),
    /// Write beside the answer: stdout, or stderr when stdout is not a terminal.
    Side(String),
    /// A warning about dsh's input, on stderr.
    Warn(String),
    /// Take the status line off.
    Hide,
    /// Show what the run waits for, with its elapsed time.
    Spin(String),
    /// Say something else about what it waits for.
    Relabel(String),
}

/// Whether a call of a tool with these arguments is asked about before it runs.
pub type Asks = std::sync::Arc<dyn Fn(&str, &serde_json::Value) -> bool + Send + Sync>;

/// What the text view keeps between events.
pub struct Human {
    color: bool,
    /// A stored transcript: prompts and turn ends are shown too.
    transcript: bool,
    /// Which calls are asked about (the loop's own rule, predicted): such a command is shown
    /// in its question first, and as running only once the user allowed it. `None`: none.
    pub asks: Option<Asks>,
    in_reasoning: bool,
    at_line_start: bool,
    /// The open cards by the model's call id, for the approval's answers.
    by_call: HashMap<String, String>,
    /// Cards whose time counts from the user's answer, not from the call.
    allowed_at: HashMap<String, i64>,
    /// Cards waiting for the user's answer: their line, and the spinner's label once they
    /// run.
    asked: HashMap<String, (String, String)>,
    /// Cards allowed after a question that showed their change (an edit's diff).
    previewed: HashSet<String>,
    /// Cards whose spinner shows while they run, with its label.
    spinning: HashMap<String, String>,
    /// Cards whose output is on the screen as it arrives.
    live: HashMap<String, LiveCall>,
    /// The child agents at work: their label and depth.
    children: HashMap<dsh_session::SessionId, (String, u32)>,
}

impl Human {
    pub fn new(color: bool, transcript: bool) -> Human {
        Human {
            color,
            transcript,
            asks: None,
            in_reasoning: false,
            at_line_start: true,
            by_call: HashMap::new(),
            allowed_at: HashMap::new(),
            asked: HashMap::new(),
            previewed: HashSet::new(),
            spinning: HashMap::new(),
            live: HashMap::new(),
            children: HashMap::new(),
        }
    }

    /// The user allowed call `call_id` at `now`: it is shown as running from now.
    pub fn allowed(&mut self, call_id: &str, now: i64) -> Vec<Said> {
        let Some(id) = self.by_call.get(call_id).cloned() else {
            return Vec::new();
        };
        self.allowed_at.insert(id.clone(), now);
        match self.asked.remove(&id) {
            Some((line, label)) => vec![Said::Side(line), Said::Spin(label)],
            None => {
                // Its question showed what it changes: the result need not again.
                self.previewed.insert(id.clone());
                // Its spinner went for the question; it runs now.
                self.spinning
                    .get(&id)
                    .cloned()
                    .map(Said::Spin)
                    .into_iter()
                    .collect()
            }
        }
    }

    /// What one view event says; `in_place` when the terminal redraws a line a command's
    /// lone carriage return went back to.
    pub fn show(&mut self, shown: Shown, in_place: bool, said: &mut Vec<Said>) {
        match shown {
            // Nothing moves on the screen while the model reads the request and thinks.
            Shown::StepStarted { .. } if !self.transcript => {
                said.push(Said::Spin("waiting for the model".into()))
            }
            Shown::Prompt { text, .. } if self.transcript => {
                self.end_reasoning(said);
                said.push(Said::Out(format!("› {text}\n")));
                self.at_line_start = true;
            }
            Shown::Reasoning(text) => {
                // The model's own words say it is working.
                said.push(Said::Hide);
                if !self.in_reasoning {
                    self.in_reasoning = true;
                    if !self.at_line_start {
                        said.push(Said::Side("\n".into()));
                    }
                    let open = if self.color {
                        "\x1b[2m"
                    } else {
                        "[reasoning]\n"
                    };
                    said.push(Said::Side(open.into()));
                }
                self.at_line_start = text.ends_with('\n');
                said.push(Said::Side(text));
            }
            Shown::Text(text) => {
                said.push(Said::Hide);
                self.end_reasoning(said);
                self.at_line_start = text.ends_with('\n');
                said.push(Said::Out(text));
            }
            Shown::Answered(_) => {
                said.push(Said::Hide);
                self.end_reasoning(said);
                if !self.at_line_start {
                    said.push(Said::Out("\n".into()));
                    self.at_line_start = true;
                }
            }
            Shown::CallOpened(card) => {
                said.push(Said::Hide);
                self.end_reasoning(said);
                self.opened(&card, said);
            }
            Shown::CallOutput { card, output, .. } => {
                let color = self.color;
                let live = self
                    .live
                    .entry(card)
                    .or_insert_with(|| LiveCall::new(color));
                let text = live.piece(&output, in_place);
                // A line the command has not ended (a progress counter) keeps the status off
                // until it does: the command's own output says enough.
                if !text.is_empty() {
                    said.push(Said::Side(text));
                }
            }
            Shown::CallClosed(closed) => {
                said.push(Said::Hide);
                self.closed(closed, said);
            }
            // The plan, whole, each time the model changes it.
            Shown::Plan { entries, .. } => {
                self.end_reasoning(said);
                said.push(Said::Side(plan_lines(&entries, self.color)));
            }
            // The transcript keeps everything: the mark says where the model's history
            // starts again from a summary.
            Shown::Compacted(compaction) => {
                self.end_reasoning(said);
                said.push(Said::Side(compacted_line(&compaction, self.color)));
            }
            // The model streams tool calls, which show nothing else: the status says how far.
            Shown::ModelProgress(progress) => {
                let calls = count(progress.tool_calls as usize, "tool call", "tool calls");
                let size = kilobytes(progress.argument_bytes);
                said.push(Said::Relabel(format!(
                    "the model is writing {calls} · {size} · latest: {}",
                    progress.tool
                )));
            }
            Shown::Warnings(warnings) if !self.transcript => {
                said.extend(warnings.into_iter().map(Said::Warn))
            }
            Shown::TurnEnded { reason, .. } if self.transcript => {
                self.end_reasoning(said);
                if !self.at_line_start {
                    said.push(Said::Out("\n".into()));
                }
                said.push(Said::Out(turn_end_line(&reason)));
                self.at_line_start = true;
            }
            // One dim line a run of the user's hooks.
            Shown::HookRan(ran) => {
                self.end_reasoning(said);
                let line = dsh_view::hook_line(&ran);
                said.push(Said::Side(match self.color {
                    true => format!("\x1b[2m{line}\x1b[0m\n"),
                    false => format!("{line}\n"),
                }));
            }
            Shown::StepStarted { .. }
            | Shown::Prompt { .. }
            | Shown::Warnings(_)
            | Shown::TurnEnded { .. }
            | Shown::TurnStarted { .. }
            | Shown::Title(_)
            | Shown::Subagent(_)
            | Shown::Compacting(_) => {}
        }
    }

    /// A child agent's event: a line under the card that started it, `  ↳ label · what`.
    pub fn child(&mut self, event: &ViewEvent) -> Vec<Said> {
        let label = match &event.shown {
            Shown::Subagent(child) => {
                self.children
                    .insert(event.session.clone(), (child.label.clone(), child.depth));
                return Vec::new();
            }
            _ => match self.children.get(&event.session) {
                Some(known) => known.clone(),
                None => return Vec::new(),
            },
        };
        let Some(line) = dsh_view::child_line(&event.shown) else {
            return Vec::new();
        };
        if matches!(event.shown, Shown::TurnEnded { .. }) {
            self.children.remove(&event.session);
        }
        let (label, depth) = label;
        let indent = "  ".repeat(depth as usize);
        let text = match self.color {
            true => format!("{indent}\x1b[2m↳ {label} ·\x1b[0m {line}\n"),
            false => format!("{indent}↳ {label} · {line}\n"),
        };
        let mut said = Vec::new();
        self.end_reasoning(&mut said);
        said.push(Said::Side(text));
        said
    }

    fn end_reasoning(&mut self, said: &mut Vec<Said>) {
        if self.in_reasoning {
            self.in_reasoning = false;
            let close = if self.color {
                "\x1b[0m\n"
            } else {
                "\n[/reasoning]\n"
            };
            said.push(Said::Side(close.into()));
            self.at_line_start = true;
        }
    }

    /// A call's line: a command as `$ command  # what for`, another call as `▸ tool what`;
    /// a plan's call shows nothing (the plan it records is shown).
    fn opened(&mut self, card: &Card, said: &mut Vec<Said>) {
        let color = self.color;
        let (line, label) = match &card.look {
            _ if card.kind == ToolKindHint::Plan => return,
            Look::Terminal {
                command,
                description,
                ..
            } => {
                // The model's own words for the command, beside it.
                let about = description
                    .as_deref()
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map(|d| match color {
                        true => format!("  \x1b[2m# {d}\x1b[0m"),
                        false => format!("  # {d}"),
                    })
                    .unwrap_or_default();
                let line = match color {
                    true => format!("\x1b[1;36m$\x1b[0m \x1b[1m{command}\x1b[0m{about}\n"),
                    false => format!("$ {command}{about}\n"),
                };
                (line, Label::Command(command))
            }
            Look::Generic {
                summary: Some(what),
                ..
            } => {
                let line = match color {
                    true => format!("\x1b[1;36m▸\x1b[0m {} \x1b[1m{what}\x1b[0m\n", card.name),
                    false => format!("▸ {} {what}\n", card.name),
                };
                (line, Label::Tool(&card.name))
            }
            Look::Generic { summary: None, .. } => (
                format!(
                    "▸ {} {}\n",
                    card.name,
                    SafeText::plain(&card.call.arguments)
                ),
                Label::Tool(&card.name),
            ),
        };
        // A stored transcript has no spinner and asks nothing.
        if self.transcript {
            said.push(Said::Side(line));
            return;
        }
        let label = label.text();
        let terminal = matches!(card.look, Look::Terminal { .. });
        let asked = self
            .asks
            .as_ref()
            .is_some_and(|asks| asks(&card.call.name, &card.raw_input));
        if terminal && asked {
            // Its question shows it; it is echoed as running after a yes.
            self.asked.insert(card.id.clone(), (line, label.clone()));
        } else {
            said.push(Said::Side(line));
            said.push(Said::Spin(label.clone()));
        }
        // What an answer to a question needs, kept only when calls are asked about.
        if asked {
            self.spinning.insert(card.id.clone(), label);
            self.by_call
                .insert(card.call.call_id.clone(), card.id.clone());
        }
    }

    fn closed(&mut self, closed: Closed, said: &mut Vec<Said>) {
        let Closed {
            card,
            end,
            elapsed_ms,
        } = closed;
        let id = &card.id;
        // Declined or cancelled before an answer: it never ran, and its ending says so.
        take(&mut self.asked, id);
        take(&mut self.spinning, id);
        if self.by_call.get(&card.call.call_id) == Some(id) {
            self.by_call.remove(&card.call.call_id);
        }
        let allowed_at = take(&mut self.allowed_at, id);
        let live = take(&mut self.live, id);
        let previewed = !self.previewed.is_empty() && self.previewed.remove(id);
        let plan = card.kind == ToolKindHint::Plan;
        match &end {
            // The plan record that follows shows it.
            CardEnd::Completed { .. } if plan => return,
            // Its turn ended without a result: the turn's end says why.
            CardEnd::Abandoned => return,
            CardEnd::Completed { .. } | CardEnd::Failed { .. } => {}
        }
        let mut text = String::new();
        // A plan that was refused: its call was not shown, its failure says whose.
        if plan {
            text.push_str(&format!("▸ {}\n", card.name));
        }
        let shown_live = match live {
            Some(mut live) => {
                text.push_str(&live.finish());
                !live.cut
            }
            None => false,
        };
        // An asked call's time counts from the answer.
        let ms = match (elapsed_ms, allowed_at) {
            (Some(elapsed), Some(at)) => card.opened_at + elapsed - at,
            (Some(elapsed), None) => elapsed,
            (None, _) => 0,
        };
        let secs = ms.max(0) as f64 / 1000.0;
        let (body, ending) = match end {
            CardEnd::Completed { content, shown } => {
                self.completed(shown, &content, shown_live, previewed, secs)
            }
            CardEnd::Failed {
                content,
                code,
                shown,
            } => failed(shown, content, code, shown_live),
            CardEnd::Abandoned => (String::new(), Ending::Nothing),
        };
        text.push_str(&body);
        let mut text = match self.color {
            true => SafeText::coloured_owned(text),
            false => SafeText::plain_owned(text),
        };
        // dsh's own line, styled after the output was made safe (it filters the tool's words
        // it quotes itself).
        text.push_str(&ending.line(self.color));
        said.push(Said::Side(text));
    }

    /// A result as shown under its call: what the tool shows of it, unless it was on the
    /// screen already, and how it ended.
    fn completed(
        &self,
        shown: ToolResultView,
        content: &str,
        shown_live: bool,
        previewed: bool,
        secs: f64,
    ) -> (String, Ending) {
        let color = self.color;
        match shown {
            ToolResultView::Diff { summary, .. } if previewed => (
                String::new(),
                Ending::Change(crate::change::summary_line(&summary, color)),
            ),
            ToolResultView::Diff {
                summary,
                old_text,
                new_text,
                first_line,
                ..
            } => (
                String::new(),
                Ending::Change(crate::change::diff(
                    &summary,
                    first_line as usize,
                    &old_text,
                    &new_text,
                    color,
                )),
            ),
            ToolResultView::Generic {
                summary: Some(summary),
                ..
            } => (
                String::new(),
                Ending::Change(crate::change::summary_line(&summary, color)),
            ),
            ToolResultView::Generic { summary: None, .. } if self.transcript => {
                let mut text = content.to_owned();
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                (text, Ending::Nothing)
            }
            // A live run shows the head of a long text (an MCP server's, say).
            ToolResultView::Generic { summary: None, .. } => {
                match crate::excerpt::head(content, crate::excerpt::SHOWN_LINES) {
                    (text, 0) => (text, Ending::Nothing),
                    (text, left) => (
                        text,
                        Ending::Said(format!("[… {left} more lines not shown]")),
                    ),
                }
            }
            ToolResultView::Terminal { output, exit } => {
                let mut text = match shown_live {
                    true => String::new(),
                    false => output,
                };
                if let Some(note) = &exit.note {
                    text.push_str(note);
                    text.push('\n');
                }
                (text, terminal_ending(&exit, secs))
            }
        }
    }
}

/// What the spinner says while a call runs: its command, or the tool's name.
enum Label<'a> {
    Command(&'a str),
    Tool(&'a str),
}

impl Label<'_> {
    fn text(&self) -> String {
        match self {
            Label::Command(command) => format!("$ {command}"),
            Label::Tool(name) => format!("▸ {name}"),
        }
    }
}

/// `map`'s value for `id`, removed; an empty map is not hashed into (most are empty: they
/// serve questions and running output).
fn take<V>(map: &mut HashMap<String, V>, id: &str) -> Option<V> {
    match map.is_empty() {
        true => None,
        false => map.remove(id),
    }
}

/// A failed call: what a stopped command printed with the tool's own closing words, a
/// cancel in the tool's words, or the error.
fn failed(
    shown: Option<ToolResultView>,
    content: String,
    code: Option<String>,
    shown_live: bool,
) -> (String, Ending) {
    match shown {
        Some(ToolResultView::Terminal {
            output,
            exit: TerminalExit {
                note: Some(note), ..
            },
        }) => {
            let body = match shown_live {
                true => String::new(),
                false => output,
            };
            (body, Ending::Said(note))
        }
        _ if code.as_deref() == Some(dsh_tools::codes::CANCELLED) => {
            (String::new(), Ending::Said(content))
        }
        _ => (String::new(), Ending::Error(content.trim_end().to_owned())),
    }
}

/// How a command ended: a timeout, an exit code, a signal.
fn terminal_ending(exit: &TerminalExit, secs: f64) -> Ending {
    match (exit.exit_code, &exit.signal) {
        _ if exit.timed_out => Ending::TimedOut { secs },
        (Some(code), _) => Ending::Exit { code, secs },
        (None, Some(signal)) => Ending::Killed {
            signal: signal.clone(),
            secs,
        },
        (None, None) => Ending::Nothing,
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
        let content = &entry.content;
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

/// Where the model's history starts again from a summary.
fn compacted_line(compaction: &Compaction, color: bool) -> String {
    let why = match compaction.trigger {
        CompactTrigger::Auto => "auto",
        CompactTrigger::Manual => "asked for",
        CompactTrigger::Overflow => "the server refused a long request",
    };
    // An overflow at a session's first call has no count to give.
    let size = match compaction.tokens_before {
        0 => String::new(),
        n => format!(" of {n} tokens"),
    };
    let line = format!(
        "[context compacted ({why}): the model continues from a summary{size} of the conversation]"
    );
    match color {
        true => format!("\x1b[2m{line}\x1b[0m\n"),
        false => format!("{line}\n"),
    }
}

/// A stored turn's end, in the transcript.
fn turn_end_line(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::Error { failure } => {
            format!("[error: {}]\n", SafeText::plain(&failure.message))
        }
        TurnEndReason::Unknown => "[ended]\n".to_owned(),
        other => format!("[{}]\n", other.kind().replace('_', " ")),
    }
}

/// `n` bytes as people read them: `812 B`, `12.3 kB`, `1.2 MB`.
fn kilobytes(n: u64) -> String {
    match n {
        0..=999 => format!("{n} B"),
        1_000..=999_999 => format!("{:.1} kB", n as f64 / 1_000.0),
        _ => format!("{:.1} MB", n as f64 / 1_000_000.0),
    }
}
