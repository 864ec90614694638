//! Session events → `session/update`s: one pure renderer for live streaming and for
//! `session/load` replay, so a loaded session reads exactly as it did live.
//!
//! The renderer keeps the tool-call table: every call is announced once with a
//! deterministic id (`<turn>:<step>:<call id>`, suffixed `:2`, `:3` … when a step repeats a
//! call id), every update follows its announcement, and every call reaches `completed` or
//! `failed` — at its result, at its turn's end, or when the replay or prompt closes.

mod compaction;
mod parts;
#[cfg(test)]
mod props;
mod ring;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Diff, Notice, NoticeSeverity, Plan as AcpPlan,
    PlanEntry as AcpPlanEntry, PlanEntryPriority, PlanEntryStatus, PlanUpdate, PlanUpdateContent,
    SessionInfoUpdate, SessionUpdate, Terminal, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use dsh_agent::MessageSource;
use dsh_agent::record::{
    Chunk, PlanRecord, PlanStatus, Record, ToolCallRecord, ToolProgressRecord, ToolResultRecord,
};
use dsh_session::{SessionEvent, TurnEndReason};
use dsh_tools::{ToolCallView, ToolRegistry, ToolResultView};
use serde_json::{Value, json};

use dsh_tools::safe_text::SafeText;
use parts::{
    absolute, cap, console, exit_meta, message, meta_of, parse_arguments, present_call,
    present_result, shown, thought, tool_kind,
};

/// How much of a running call's output a client without cards is shown: the tail. Each
/// update replaces the call's content, so the whole output so far in every update would
/// cost the wire the square of the output (11.7 KB became 364 KB); the result shows it all.
const LIVE_TAIL: usize = 2 * 1024;

/// Tool output placed in one update is cut here, far below the 32 MiB a client accepts per
/// line, so a frame can never be dropped by the client for its size.
const OUTPUT_LIMIT: usize = 16 * 1024 * 1024;

/// Live streaming or load replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenderMode {
    /// A prompt's turn as it happens.
    Live,
    /// A stored session replayed by `session/load`.
    Replay,
}

/// What the client asked to see, copied when the session was created or loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RenderCaps {
    /// Zed's display-only terminal cards for bash.
    pub terminal_card: bool,
    /// `compaction_update`s (`session.compaction`).
    pub compaction: bool,
    /// `plan_update`s besides `plan` (`plan`).
    pub plan: bool,
    /// Notices (`session.notices`).
    pub notices: bool,
}

pub(crate) use compaction::compacting_updates;

/// What a person is told of a turn dsh itself stopped (a model repeating a call): a notice
/// while it happens, to a client that takes notices; else a line of the answer, live and
/// in a replay alike.
fn stopped_notice(reason: &TurnEndReason, cx: &RenderContext<'_>) -> Option<SessionUpdate> {
    let TurnEndReason::RepeatedCall { tool } = reason else {
        return None;
    };
    let text = format!(
        "dsh stopped the turn: the model kept making the same `{}` call after it was told the result would not change.",
        SafeText::plain(tool)
    );
    match (cx.caps.notices, cx.mode) {
        (true, RenderMode::Live) => Some(SessionUpdate::Notice(Notice::new(
            NoticeSeverity::Warning,
            text,
        ))),
        (true, RenderMode::Replay) => None,
        (false, RenderMode::Live | RenderMode::Replay) => Some(message(format!("\n\n[{text}]"))),
    }
}

/// A plan record as the updates a client with `caps` takes.
fn plan_updates(plan: &PlanRecord, caps: &RenderCaps) -> Vec<SessionUpdate> {
    let entries: Vec<AcpPlanEntry> = plan
        .entries
        .iter()
        .map(|entry| {
            let status = match entry.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Completed => PlanEntryStatus::Completed,
            };
            AcpPlanEntry::new(
                SafeText::plain(&entry.content),
                PlanEntryPriority::Medium,
                status,
            )
        })
        .collect();
    let mut out = Vec::new();
    if caps.plan {
        out.push(SessionUpdate::PlanUpdate(PlanUpdate::new(
            PlanUpdateContent::items(dsh_view::PLAN_ID, entries.clone()),
        )));
    }
    out.push(SessionUpdate::Plan(AcpPlan::new(entries)));
    out
}

/// The session's slash commands as `available_commands_update`; a command whose body takes
/// arguments says so with an input hint.
pub(crate) fn commands_update(commands: &dsh_agent::commands::Commands) -> SessionUpdate {
    use agent_client_protocol_schema::v1::{
        AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, UnstructuredCommandInput,
    };
    use dsh_agent::commands::Action;
    let available = commands
        .list()
        .iter()
        .map(|command| {
            let command_line =
                AvailableCommand::new(command.name.clone(), command.description.clone());
            match &command.action {
                Action::Prompt {
                    takes_arguments: true,
                    ..
                } => command_line.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new("arguments"),
                )),
                Action::Prompt { .. } | Action::Compact => command_line,
            }
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(available))
}

/// What a render call may consult.
pub(crate) struct RenderContext<'a> {
    pub mode: RenderMode,
    pub caps: RenderCaps,
    /// The session's directory (relative paths in views join it).
    pub cwd: &'a Path,
    pub tools: &'a dyn ToolRegistry,
    /// Whether a live call of this tool with these arguments will be asked about.
    pub asks: &'a (dyn Fn(&str, &Value) -> bool + Sync),
    /// The model's prices, when configured: usage updates then carry the session's cost.
    pub prices: Option<&'a dsh_llm::Prices>,
}

/// An announced call without a final status.
struct OpenCall {
    turn: u32,
    record: ToolCallRecord,
    /// Announced as a terminal card (so its final update carries `terminal_exit`).
    card: bool,
    /// The `content` it was announced with (a permission request repeats it).
    content: Vec<ToolCallContent>,
    title: String,
    kind: ToolKind,
    raw_input: Value,
    /// Announced as waiting for permission, not yet running.
    pending: bool,
    /// Output sent while the call ran: a card got it already, so its final update must not
    /// append it again.
    streamed: bool,
    /// For a client without cards: the tail of the output so far, shown as the call's
    /// content, and how many bytes before it are not.
    live: String,
    live_dropped: u64,
}

/// What a permission request repeats of an announced call.
pub(crate) struct Announced {
    pub tool_call_id: String,
    pub title: String,
    pub kind: ToolKind,
    pub raw_input: Value,
    pub content: Vec<ToolCallContent>,
}

/// The renderer's state for one session (live) or one replay.
#[derive(Default)]
pub(crate) struct Renderer {
    open: HashMap<String, OpenCall>,
    /// Announcement order, so closures come out in a stable order.
    order: Vec<String>,
    /// Per step and harness call id: the ACP ids still open, earliest first.
    by_call: HashMap<(u32, u32, String), Vec<String>>,
    /// Per step and harness call id: how many calls have used it.
    used: HashMap<(u32, u32, String), u32>,
    /// Steps that streamed a chunk since their last committed message.
    streamed: HashSet<(u32, u32)>,
    /// Replay: human prompts held until their step shows an answer.
    held: Vec<((u32, u32), SessionUpdate)>,
    /// The streamed answer and reasoning, filtered as streams: a chunk may end inside an
    /// escape sequence.
    text: SafeText,
    reasoning: SafeText,
    /// The context ring's window and the session's cost so far.
    ring: ring::Ring,
}

impl Renderer {
    /// Goes on from where a replay of the same session left: the ring's window and cost.
    pub(crate) fn carry_on(&mut self, replayed: &Renderer) {
        self.ring = replayed.ring.clone();
    }

    /// The updates for one event.
    pub(crate) fn render(
        &mut self,
        event: &SessionEvent,
        cx: &RenderContext<'_>,
    ) -> Vec<SessionUpdate> {
        match Record::decode(event) {
            Ok(record) => self.render_record(record, cx),
            Err(err) => {
                tracing::warn!("not rendered: {err}");
                Vec::new()
            }
        }
    }

    /// The updates for one event already decoded.
    pub(crate) fn render_record(
        &mut self,
        record: Record,
        cx: &RenderContext<'_>,
    ) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        match record {
            Record::UserMessage(user) => {
                if cx.mode == RenderMode::Replay && user.message.source == MessageSource::User {
                    let update = SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::from(SafeText::plain(&user.message.text)),
                    ));
                    self.held.push(((user.turn, user.step), update));
                }
            }
            Record::AssistantChunk(chunk) => {
                self.release((chunk.turn, chunk.step), &mut out);
                self.streamed.insert((chunk.turn, chunk.step));
                let (piece, is_text) = match chunk.chunk {
                    Chunk::ReasoningDelta(text) => (self.reasoning.push(text.as_bytes()), false),
                    Chunk::TextDelta(text) => (self.text.push(text.as_bytes()), true),
                };
                match (piece.is_empty(), is_text) {
                    (true, _) => {}
                    (false, true) => out.push(message(piece)),
                    (false, false) => out.push(thought(piece)),
                }
            }
            Record::AssistantMessage(answer) => {
                let step = (answer.turn, answer.step);
                self.release(step, &mut out);
                self.text.finish();
                self.reasoning.finish();
                if !self.streamed.remove(&step) {
                    let reasoning = answer.message.reasoning.unwrap_or_default();
                    let reasoning = SafeText::plain(&reasoning);
                    if !reasoning.is_empty() {
                        out.push(thought(reasoning));
                    }
                    let content = SafeText::plain(&answer.message.content);
                    if !content.is_empty() {
                        out.push(message(content));
                    }
                }
                // The context ring: how full the model's context is after this call.
                out.extend(
                    self.ring
                        .answered(answer.context, answer.usage.as_ref(), cx.prices),
                );
            }
            Record::ToolCall(call) => {
                self.release((call.turn, call.step), &mut out);
                out.push(self.announce(call, cx));
            }
            Record::ToolResult(result) => self.result(result, cx, &mut out),
            Record::StepEnd(at) => {
                // A prompt whose turn ended before any answer is still part of the
                // conversation (the model sees it too): shown at its step's end.
                self.release((at.turn, at.step), &mut out);
                self.streamed.remove(&(at.turn, at.step));
            }
            Record::TurnEnd(end) => {
                out.extend(self.close_turn(Some(end.turn)));
                out.extend(stopped_notice(&end.reason, cx));
            }
            // The transcript keeps everything; the client is shown where the model's history
            // starts again from a summary.
            Record::Compacted(record) => {
                out.extend(compaction::compacted_updates(
                    &record,
                    cx.caps,
                    &mut self.ring,
                    cx.prices,
                ));
            }
            // The editor's history names the session from here on (a replay too).
            // In a replay it follows the prompt that gave it, which may be held.
            Record::Title(title) => {
                let update = SessionUpdate::SessionInfoUpdate(
                    SessionInfoUpdate::new().title(SafeText::plain(&title.title)),
                );
                match self.held.last().map(|(step, _)| *step) {
                    Some(step) => self.held.push((step, update)),
                    None => out.push(update),
                }
            }
            // The plan: always as `plan`, which every client takes, and as `plan_update` to a
            // client that said it takes those.
            Record::Plan(plan) => out.extend(plan_updates(&plan, &cx.caps)),
            // A settings change reaches the client through the option set of the request
            // that made it (the record layer answers with it).
            Record::ConfigChanged(_) => {}
            Record::TurnStart(_)
            | Record::StepStart(_)
            | Record::Instructions(_)
            | Record::Other => {}
        }
        out
    }

    /// Closes, as failed, every open call of `turn` (every open call when `None`).
    pub(crate) fn close_turn(&mut self, turn: Option<u32>) -> Vec<SessionUpdate> {
        let closing: Vec<String> = self
            .order
            .iter()
            .filter(|id| {
                self.open
                    .get(*id)
                    .is_some_and(|call| turn.is_none_or(|t| call.turn == t))
            })
            .cloned()
            .collect();
        let mut out = Vec::new();
        for id in closing {
            if let Some(call) = self.take(&id) {
                let mut update = ToolCallUpdate::new(
                    ToolCallId::new(id.as_str()),
                    ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
                );
                if call.card {
                    update = update.meta(exit_meta(&id, None, None));
                }
                out.push(SessionUpdate::ToolCallUpdate(update));
            }
        }
        self.held.clear();
        out
    }

    /// The updates for a running call's output: appended to its terminal card, or, for a
    /// client without cards, the output so far as its content (each update replaces it).
    pub(crate) fn progress(&mut self, piece: ToolProgressRecord) -> Vec<SessionUpdate> {
        let Some(id) = self
            .by_call
            .get(&(piece.turn, piece.step, piece.call_id))
            .and_then(|ids| ids.last().cloned())
        else {
            return Vec::new();
        };
        let Some(call) = self.open.get_mut(&id) else {
            return Vec::new();
        };
        call.streamed = true;
        let tool_call_id = ToolCallId::new(id.as_str());
        let update = if call.card {
            ToolCallUpdate::new(tool_call_id, ToolCallUpdateFields::new()).meta(meta_of(json!({
                "terminal_output": {"terminal_id": id, "data": piece.output}
            })))
        } else {
            call.live.push_str(&piece.output);
            if call.live.len() > LIVE_TAIL {
                let mut cut = call.live.len() - LIVE_TAIL;
                while !call.live.is_char_boundary(cut) {
                    cut += 1;
                }
                call.live.drain(..cut);
                call.live_dropped += cut as u64;
            }
            let shown = match call.live_dropped {
                0 => call.live.clone(),
                n => format!(
                    "[… {n} earlier bytes; all of it when the command ends …]\n{}",
                    call.live
                ),
            };
            ToolCallUpdate::new(
                tool_call_id,
                ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::from(console(&shown, None, None))]),
            )
        };
        vec![SessionUpdate::ToolCallUpdate(update)]
    }

    /// Marks an announced call as running; true when it had been announced as waiting.
    pub(crate) fn start(&mut self, tool_call_id: &str) -> bool {
        match self.open.get_mut(tool_call_id) {
            Some(call) if call.pending => {
                call.pending = false;
                true
            }
            _ => false,
        }
    }

    /// The open call a permission request is about: the latest open call of this step with
    /// this harness id.
    pub(crate) fn announced(&self, turn: u32, step: u32, call_id: &str) -> Option<Announced> {
        let ids = self.by_call.get(&(turn, step, call_id.to_owned()))?;
        let id = ids.last()?;
        let call = self.open.get(id)?;
        Some(Announced {
            tool_call_id: id.clone(),
            title: call.title.clone(),
            kind: call.kind,
            raw_input: call.raw_input.clone(),
            content: call.content.clone(),
        })
    }

    fn release(&mut self, step: (u32, u32), out: &mut Vec<SessionUpdate>) {
        if self.held.iter().any(|(s, _)| *s == step) {
            let held = std::mem::take(&mut self.held);
            for (s, update) in held {
                if s == step {
                    out.push(update);
                } else {
                    self.held.push((s, update));
                }
            }
        }
    }

    fn announce(&mut self, call: ToolCallRecord, cx: &RenderContext<'_>) -> SessionUpdate {
        let key = (call.turn, call.step, call.call_id.clone());
        let n = self.used.entry(key.clone()).or_insert(0);
        *n += 1;
        let id = match *n {
            1 => format!("{}:{}:{}", call.turn, call.step, call.call_id),
            n => format!("{}:{}:{}:{n}", call.turn, call.step, call.call_id),
        };
        let raw_input = parse_arguments(&call.arguments);
        let view = present_call(cx.tools, &call);
        let status = match cx.mode {
            RenderMode::Live if (cx.asks)(&call.name, &raw_input) => ToolCallStatus::Pending,
            _ => ToolCallStatus::InProgress,
        };
        let (title, kind, content, locations, card, meta) = match view {
            Some(ToolCallView::Terminal {
                command,
                description,
                cwd,
                raw_input: _,
            }) => {
                let mut content: Vec<ToolCallContent> = description
                    .map(|d| ToolCallContent::from(SafeText::plain(&d)))
                    .into_iter()
                    .collect();
                let mut meta = None;
                if cx.caps.terminal_card {
                    content.push(ToolCallContent::Terminal(Terminal::new(id.clone())));
                    let dir = match cwd {
                        Some(dir) if dir.is_relative() => cx.cwd.join(dir),
                        Some(dir) => dir,
                        None => cx.cwd.to_path_buf(),
                    };
                    meta = Some(meta_of(json!({
                        "terminal_info": {"terminal_id": id, "cwd": dir}
                    })));
                }
                let card = meta.is_some();
                (command, ToolKind::Execute, content, Vec::new(), card, meta)
            }
            Some(ToolCallView::Generic {
                title,
                summary: _,
                kind,
                raw_input: _,
                content,
                locations,
            }) => (
                title,
                tool_kind(kind),
                content
                    .iter()
                    .map(|c| ToolCallContent::from(SafeText::plain(c)))
                    .collect(),
                locations
                    .into_iter()
                    .map(|l| ToolCallLocation::new(absolute(cx.cwd, l.path)).line(l.line))
                    .collect(),
                false,
                None,
            ),
            None => (
                call.name.clone(),
                ToolKind::Other,
                Vec::new(),
                Vec::new(),
                false,
                None,
            ),
        };
        let title = SafeText::plain(&title);
        let mut announcement = ToolCall::new(ToolCallId::new(id.as_str()), title.clone())
            .kind(kind)
            .status(status)
            .content(content.clone())
            .locations(locations)
            .raw_input(raw_input.clone());
        if let Some(meta) = meta {
            announcement = announcement.meta(meta);
        }
        self.by_call.entry(key).or_default().push(id.clone());
        self.order.push(id.clone());
        self.open.insert(
            id,
            OpenCall {
                turn: call.turn,
                record: call,
                card,
                content,
                title,
                kind,
                raw_input,
                pending: status == ToolCallStatus::Pending,
                streamed: false,
                live: String::new(),
                live_dropped: 0,
            },
        );
        SessionUpdate::ToolCall(announcement)
    }

    fn result(
        &mut self,
        result: ToolResultRecord,
        cx: &RenderContext<'_>,
        out: &mut Vec<SessionUpdate>,
    ) {
        let key = (result.turn, result.step, result.call_id.clone());
        let open = self.by_call.get(&key).and_then(|ids| ids.first().cloned());
        let id = match open {
            Some(id) => id,
            None => {
                // A result whose call this renderer never saw (a repaired log): announce a
                // stand-in so the update still follows a call.
                let stand_in = ToolCallRecord {
                    turn: result.turn,
                    step: result.step,
                    call_id: result.call_id.clone(),
                    name: "tool".into(),
                    arguments: String::new(),
                };
                out.push(self.announce(stand_in, cx));
                match self.by_call.get(&key).and_then(|ids| ids.last().cloned()) {
                    Some(id) => id,
                    None => return,
                }
            }
        };
        let Some(call) = self.take(&id) else {
            return;
        };
        let view = if result.is_error {
            None
        } else {
            present_result(cx.tools, &call.record, &result)
        };
        let tool_call_id = ToolCallId::new(id.as_str());
        let update = if result.is_error {
            let update = ToolCallUpdate::new(
                tool_call_id,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Failed)
                    .content(vec![ToolCallContent::from(shown(&result.content))]),
            );
            if call.card {
                update.meta(exit_meta(&id, None, None))
            } else {
                update
            }
        } else {
            match view {
                Some(ToolResultView::Terminal { output, exit }) if call.card => {
                    let mut meta = exit_meta(&id, exit.exit_code, exit.signal.as_deref());
                    // The card appends what it gets: output it was sent while the call ran is
                    // not sent again.
                    if !call.streamed {
                        meta.insert(
                            "terminal_output".into(),
                            json!({"terminal_id": id, "data": cap(&output)}),
                        );
                    }
                    ToolCallUpdate::new(
                        tool_call_id,
                        ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
                    )
                    .meta(meta)
                }
                Some(ToolResultView::Terminal { output, exit }) => ToolCallUpdate::new(
                    tool_call_id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(vec![ToolCallContent::from(console(
                            &output,
                            exit.exit_code,
                            exit.signal.as_deref(),
                        ))]),
                ),
                Some(ToolResultView::Diff {
                    path,
                    old_text,
                    new_text,
                    first_line,
                    created,
                    summary: _,
                }) => {
                    let (diff, location) =
                        diff_card(cx.cwd, path, old_text, new_text, first_line, created);
                    ToolCallUpdate::new(
                        tool_call_id,
                        ToolCallUpdateFields::new()
                            .status(ToolCallStatus::Completed)
                            .content(vec![diff])
                            .locations(vec![location]),
                    )
                }
                Some(ToolResultView::Generic {
                    content,
                    summary: _,
                }) => ToolCallUpdate::new(
                    tool_call_id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(
                            content
                                .iter()
                                .map(|c| ToolCallContent::from(shown(c)))
                                .collect::<Vec<_>>(),
                        ),
                ),
                None => ToolCallUpdate::new(
                    tool_call_id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(vec![ToolCallContent::from(shown(&result.content))]),
                ),
            }
        };
        out.push(SessionUpdate::ToolCallUpdate(update));
    }

    fn take(&mut self, id: &str) -> Option<OpenCall> {
        let call = self.open.remove(id)?;
        self.order.retain(|o| o != id);
        let key = (
            call.record.turn,
            call.record.step,
            call.record.call_id.clone(),
        );
        if let Some(ids) = self.by_call.get_mut(&key) {
            ids.retain(|o| o != id);
            if ids.is_empty() {
                self.by_call.remove(&key);
            }
        }
        Some(call)
    }
}

/// A change as ACP's `diff` content with the location of its first line. A file that did not
/// exist has no old text, so the card shows a creation.
pub(crate) fn diff_card(
    cwd: &Path,
    path: PathBuf,
    old_text: String,
    new_text: String,
    first_line: u32,
    created: bool,
) -> (ToolCallContent, ToolCallLocation) {
    let path = absolute(cwd, path);
    let diff = Diff::new(path.clone(), new_text).old_text((!created).then_some(old_text));
    (
        ToolCallContent::Diff(diff),
        ToolCallLocation::new(path).line(first_line),
    )
}
