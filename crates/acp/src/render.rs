//! The turn view → `session/update`s: one pure mapping for live streaming and for
//! `session/load` replay, so a loaded session reads exactly as it did live.
//!
//! The session's turn view (`dsh-view`) keeps the call table; this keeps only how each card
//! was announced to the client. Every call is announced once under its card's id, every
//! update follows its announcement, and every call reaches `completed` or `failed` — at its
//! result, at its turn's end, or when the replay or prompt closes.

mod compaction;
mod parts;
#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, Cost, Diff, Notice, NoticeSeverity, Plan as AcpPlan,
    PlanEntry as AcpPlanEntry, PlanEntryPriority, PlanEntryStatus, PlanUpdate, PlanUpdateContent,
    SessionInfoUpdate, SessionUpdate, Terminal, ToolCall, ToolCallContent, ToolCallId,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use dsh_agent::MessageSource;
use dsh_agent::record::{HookRanRecord, PlanEntry, PlanStatus, Record, ToolProgressRecord};
use dsh_session::{SessionEvent, SessionId, TurnEndReason};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{ToolRegistry, ToolResultView};
use dsh_view::{Card, CardEnd, Closed, Look, Projector, Shown, Tally, ViewEvent};
use serde_json::{Value, json};

use parts::{absolute, cap, console, exit_meta, message, meta_of, shown, thought, tool_kind};

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
    /// Child sessions as sessions of their own (`subagents`): `subagent_update`s and the
    /// children's own updates; without it a child's work is lines in its task's card.
    pub subagents: bool,
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

/// A run of one of the user's hooks, as the terminal's dim line says it: a notice while it
/// happens to a client that takes notices (a warning when the run failed). Another client is
/// told only of a failed run, as a line of the answer, live and in a replay alike: what a hook
/// decided about a call shows in the call's card.
fn hook_notice(ran: &HookRanRecord, cx: &RenderContext<'_>) -> Option<SessionUpdate> {
    let line = SafeText::plain(&dsh_view::hook_line(ran)).to_string();
    let failed = ran.error.is_some();
    match (cx.caps.notices, cx.mode, failed) {
        (true, RenderMode::Live, _) => {
            let severity = match failed {
                true => NoticeSeverity::Warning,
                false => NoticeSeverity::Info,
            };
            Some(SessionUpdate::Notice(Notice::new(severity, line)))
        }
        (true, RenderMode::Replay, _) | (false, RenderMode::Live | RenderMode::Replay, false) => {
            None
        }
        (false, RenderMode::Live | RenderMode::Replay, true) => {
            Some(message(format!("\n\n[{line}]")))
        }
    }
}

/// A plan as the updates a client with `caps` takes.
fn plan_updates(entries: &[PlanEntry], caps: &RenderCaps) -> Vec<SessionUpdate> {
    let entries: Vec<AcpPlanEntry> = entries
        .iter()
        .map(|entry| {
            let status = match entry.status {
                PlanStatus::Pending => PlanEntryStatus::Pending,
                PlanStatus::InProgress => PlanEntryStatus::InProgress,
                PlanStatus::Completed => PlanEntryStatus::Completed,
            };
            AcpPlanEntry::new(entry.content.clone(), PlanEntryPriority::Medium, status)
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

/// What ACP keeps of an announced card beyond the view's: how it was announced, for the
/// permission request that repeats it and for the updates that follow.
struct OpenCall {
    /// The view's card.
    card: Arc<Card>,
    /// Announced as a terminal card (so its final update carries `terminal_exit`).
    terminal: bool,
    /// The `content` it was announced with (a permission request repeats it).
    content: Vec<ToolCallContent>,
    kind: ToolKind,
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

/// The renderer of one session (live) or one replay: the session's turn view, mapped.
pub(crate) struct Renderer {
    view: Projector,
    /// The announced cards still open, by card id.
    open: HashMap<String, OpenCall>,
}

impl Renderer {
    /// A renderer for `session`, from its start.
    pub(crate) fn new(session: SessionId) -> Renderer {
        Renderer {
            view: Projector::new(session),
            open: HashMap::new(),
        }
    }

    /// Goes on from where a replay of the same session left: the usage and the cost.
    pub(crate) fn carry_on(&mut self, replayed: &Renderer) {
        self.view.carry_on(&replayed.view);
    }

    /// The model's prices, for the cost of what is counted from here on.
    pub(crate) fn set_prices(&mut self, prices: Option<&dsh_llm::Prices>) {
        self.view.set_prices(prices.cloned());
    }

    /// Counts what a stored event used, rendering nothing (a replay that sends nothing).
    pub(crate) fn account(&mut self, event: &SessionEvent) {
        self.view.account(event);
    }

    /// The id under which the latest open card of the model's call `call_id` was announced,
    /// with its title and what it is about in a few words: the call a child agent's header
    /// names.
    pub(crate) fn card_of_call(&self, call_id: &str) -> Option<(String, String, String)> {
        let card = self.view.open_card_of_call(call_id)?;
        let label = match &card.look {
            Look::Generic {
                summary: Some(summary),
                ..
            } => summary.clone(),
            Look::Generic { summary: None, .. } | Look::Terminal { .. } => card.title.clone(),
        };
        Some((card.id.clone(), card.title.clone(), label))
    }

    /// The updates for one event.
    pub(crate) fn render(
        &mut self,
        event: &SessionEvent,
        cx: &RenderContext<'_>,
    ) -> Vec<SessionUpdate> {
        match Record::decode(event) {
            Ok(record) => self.render_record(record, event.time, cx),
            Err(err) => {
                tracing::warn!("not rendered: {err}");
                Vec::new()
            }
        }
    }

    /// The updates for one event already decoded, appended at `time`.
    pub(crate) fn render_record(
        &mut self,
        record: Record,
        time: i64,
        cx: &RenderContext<'_>,
    ) -> Vec<SessionUpdate> {
        self.view.set_prices(cx.prices.cloned());
        let shown = self.view.record(record, time, cx.tools);
        self.map(shown, cx)
    }

    /// The updates for one event of a child agent's session, and the lines its task card
    /// shows of it to a client that does not show child sessions.
    pub(crate) fn render_child(
        &mut self,
        event: &SessionEvent,
        cx: &RenderContext<'_>,
    ) -> (Vec<SessionUpdate>, Vec<String>) {
        let record = match Record::decode(event) {
            Ok(record) => record,
            Err(err) => {
                tracing::warn!("not rendered: {err}");
                return (Vec::new(), Vec::new());
            }
        };
        self.view.set_prices(cx.prices.cloned());
        let shown = self.view.record(record, event.time, cx.tools);
        let lines = shown
            .iter()
            .filter_map(|event| dsh_view::child_line(&event.shown))
            .collect();
        (self.map(shown, cx), lines)
    }

    /// Closes, as failed, every open call of `turn` (every open call when `None`).
    pub(crate) fn close_turn(&mut self, turn: Option<u32>) -> Vec<SessionUpdate> {
        let shown = self.view.close_turn(turn);
        shown
            .into_iter()
            .filter_map(|event| match event.shown {
                Shown::CallClosed(closed) => self.closed(closed, Path::new("")),
                _ => None,
            })
            .collect()
    }

    /// The updates for a running call's output: appended to its terminal card, or, for a
    /// client without cards, the output so far as its content (each update replaces it).
    pub(crate) fn progress(&mut self, piece: ToolProgressRecord) -> Vec<SessionUpdate> {
        let shown = self.view.progress(piece);
        shown
            .into_iter()
            .filter_map(|event| match event.shown {
                Shown::CallOutput { card, output, .. } => self.output(&card, &output),
                _ => None,
            })
            .collect()
    }

    /// Marks an announced running call as waiting for a question nobody foresaw (a hook of
    /// the user's asks about it); true when it was running, so the client must be told.
    pub(crate) fn hold(&mut self, tool_call_id: &str) -> bool {
        match self.open.get_mut(tool_call_id) {
            Some(call) if !call.pending => {
                call.pending = true;
                true
            }
            _ => false,
        }
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
    /// this call id.
    pub(crate) fn announced(&self, turn: u32, step: u32, call_id: &str) -> Option<Announced> {
        let card = self.view.open_card(turn, step, call_id)?;
        let call = self.open.get(&card.id)?;
        Some(Announced {
            tool_call_id: card.id.clone(),
            title: call.card.title.clone(),
            kind: call.kind,
            raw_input: call.card.raw_input.clone(),
            content: call.content.clone(),
        })
    }

    /// View events as updates.
    fn map(&mut self, shown: Vec<ViewEvent>, cx: &RenderContext<'_>) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        for event in shown {
            match event.shown {
                // The editor shows a prompt as it is sent; a replay shows the person's.
                Shown::Prompt { text, source } => {
                    if cx.mode == RenderMode::Replay && source == MessageSource::User {
                        out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                            ContentBlock::from(text),
                        )));
                    }
                }
                // The editor's history names the session from here on (a replay too).
                Shown::Title(title) => out.push(SessionUpdate::SessionInfoUpdate(
                    SessionInfoUpdate::new().title(title),
                )),
                Shown::Text(text) => out.push(message(text)),
                Shown::Reasoning(text) => out.push(thought(text)),
                Shown::Answered(answer) => {
                    if !answer.streamed {
                        let (reasoning, text) = (answer.reasoning(), answer.text());
                        if !reasoning.is_empty() {
                            out.push(thought(reasoning));
                        }
                        if !text.is_empty() {
                            out.push(message(text));
                        }
                    }
                    // The context ring: how full the model's context is after this call.
                    out.extend(
                        answer
                            .context
                            .map(|c| usage(c.used, c.window, self.view.tally())),
                    );
                }
                Shown::CallOpened(card) => out.push(self.announce(card, cx)),
                Shown::CallOutput { card, output, .. } => out.extend(self.output(&card, &output)),
                Shown::CallClosed(closed) => out.extend(self.closed(closed, cx.cwd)),
                // The plan: always as `plan`, which every client takes, and as `plan_update`
                // to a client that said it takes those.
                Shown::Plan { entries, .. } => out.extend(plan_updates(&entries, &cx.caps)),
                // The transcript keeps everything; the client is shown where the model's
                // history starts again from a summary, and the context it left.
                Shown::Compacted(compaction) => {
                    out.extend(compaction::compacted_updates(&compaction, cx.caps));
                    out.extend(
                        compaction
                            .context
                            .map(|c| usage(c.used, c.window, self.view.tally())),
                    );
                }
                // An editor has no place for them but its agent log.
                Shown::Warnings(warnings) => {
                    for warning in warnings {
                        tracing::warn!("{warning}");
                    }
                }
                Shown::TurnEnded { reason, .. } => out.extend(stopped_notice(&reason, cx)),
                Shown::Compacting(note) => out.extend(compacting_updates(&note, cx.caps)),
                // One session's renderer projects one session: children have their own.
                Shown::TurnStarted { .. }
                | Shown::StepStarted { .. }
                | Shown::ModelProgress(_)
                | Shown::Subagent(_) => {}
                Shown::HookRan(ran) => out.extend(hook_notice(&ran, cx)),
            }
        }
        out
    }

    fn announce(&mut self, card: Arc<Card>, cx: &RenderContext<'_>) -> SessionUpdate {
        let id = card.id.clone();
        let status = match cx.mode {
            RenderMode::Live if (cx.asks)(&card.name, &card.raw_input) => ToolCallStatus::Pending,
            RenderMode::Live | RenderMode::Replay => ToolCallStatus::InProgress,
        };
        let (kind, content, locations, meta) = match &card.look {
            Look::Terminal {
                description, cwd, ..
            } => {
                let mut content: Vec<ToolCallContent> = description
                    .iter()
                    .map(|d| ToolCallContent::from(d.clone()))
                    .collect();
                let mut meta = None;
                if cx.caps.terminal_card {
                    content.push(ToolCallContent::Terminal(Terminal::new(id.clone())));
                    let dir = match cwd {
                        Some(dir) if dir.is_relative() => cx.cwd.join(dir),
                        Some(dir) => dir.clone(),
                        None => cx.cwd.to_path_buf(),
                    };
                    meta = Some(meta_of(json!({
                        "terminal_info": {"terminal_id": id, "cwd": dir}
                    })));
                }
                (ToolKind::Execute, content, Vec::new(), meta)
            }
            Look::Generic { content, .. } => (
                tool_kind(card.kind),
                content
                    .iter()
                    .map(|c| ToolCallContent::from(c.clone()))
                    .collect(),
                card.locations
                    .iter()
                    .map(|l| ToolCallLocation::new(absolute(cx.cwd, l.path.clone())).line(l.line))
                    .collect(),
                None,
            ),
        };
        let mut announcement = ToolCall::new(ToolCallId::new(id.as_str()), card.title.clone())
            .kind(kind)
            .status(status)
            .content(content.clone())
            .locations(locations)
            .raw_input(card.raw_input.clone());
        let terminal_card = meta.is_some();
        if let Some(meta) = meta {
            announcement = announcement.meta(meta);
        }
        self.open.insert(
            id,
            OpenCall {
                card,
                terminal: terminal_card,
                content,
                kind,
                pending: status == ToolCallStatus::Pending,
                streamed: false,
                live: String::new(),
                live_dropped: 0,
            },
        );
        SessionUpdate::ToolCall(announcement)
    }

    fn output(&mut self, id: &str, output: &str) -> Option<SessionUpdate> {
        let call = self.open.get_mut(id)?;
        call.streamed = true;
        let tool_call_id = ToolCallId::new(id);
        let update = if call.terminal {
            ToolCallUpdate::new(tool_call_id, ToolCallUpdateFields::new()).meta(meta_of(json!({
                "terminal_output": {"terminal_id": id, "data": output}
            })))
        } else {
            call.live.push_str(output);
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
        Some(SessionUpdate::ToolCallUpdate(update))
    }

    /// A closed card's final update; `cwd` joins the relative path of a change (a card
    /// closed without a result has none).
    fn closed(&mut self, closed: Closed, cwd: &Path) -> Option<SessionUpdate> {
        let id = closed.card.id.clone();
        let call = self.open.remove(&id)?;
        Some(final_update(&id, &call, closed.end, cwd))
    }
}

/// A `usage_update`: the context against the window, and the session's cost so far when
/// the model's prices are known.
fn usage(used: u64, window: u64, totals: &Tally) -> SessionUpdate {
    let cost = totals
        .prices
        .as_ref()
        .map(|p| Cost::new(totals.spent, p.currency.clone()));
    SessionUpdate::UsageUpdate(UsageUpdate::new(used, window).cost(cost))
}

/// The last update of a call: its status, and its result as the tool shows it.
fn final_update(id: &str, call: &OpenCall, end: CardEnd, cwd: &Path) -> SessionUpdate {
    let tool_call_id = ToolCallId::new(id);
    let failed = |content: Option<&str>| {
        let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Failed);
        if let Some(content) = content {
            fields = fields.content(vec![ToolCallContent::from(shown(content))]);
        }
        let update = ToolCallUpdate::new(tool_call_id.clone(), fields);
        match call.terminal {
            true => update.meta(exit_meta(id, None, None)),
            false => update,
        }
    };
    let update = match end {
        CardEnd::Abandoned => failed(None),
        CardEnd::Failed { content, .. } => failed(Some(&content)),
        CardEnd::Completed { shown: view, .. } => match view {
            ToolResultView::Terminal { output, exit } if call.terminal => {
                let mut meta = exit_meta(id, exit.exit_code, exit.signal.as_deref());
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
            ToolResultView::Terminal { output, exit } => ToolCallUpdate::new(
                tool_call_id,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Completed)
                    .content(vec![ToolCallContent::from(console(
                        &output,
                        exit.exit_code,
                        exit.signal.as_deref(),
                    ))]),
            ),
            diff @ ToolResultView::Diff { .. } => {
                let (content, locations) = diff_card(cwd, &diff)
                    .map(|(diff, location)| (vec![diff], vec![location]))
                    .unwrap_or_default();
                ToolCallUpdate::new(
                    tool_call_id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Completed)
                        .content(content)
                        .locations(locations),
                )
            }
            ToolResultView::Generic { content, .. } => ToolCallUpdate::new(
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
        },
    };
    SessionUpdate::ToolCallUpdate(update)
}

/// A change as ACP's `diff` content with the location of its first line. A file that did not
/// exist has no old text, so the card shows a creation.
pub(crate) fn diff_card(
    cwd: &Path,
    view: &ToolResultView,
) -> Option<(ToolCallContent, ToolCallLocation)> {
    let ToolResultView::Diff {
        path,
        old_text,
        new_text,
        first_line,
        created,
        summary: _,
    } = view
    else {
        return None;
    };
    let path = absolute(cwd, path.clone());
    let diff =
        Diff::new(path.clone(), new_text.clone()).old_text((!created).then(|| old_text.clone()));
    Some((
        ToolCallContent::Diff(diff),
        ToolCallLocation::new(path).line(*first_line),
    ))
}
