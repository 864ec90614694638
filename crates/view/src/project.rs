//! The projector: a session's records, as they are appended or as they were stored, become
//! view events. One projector follows one session; it keeps what a turn in flight needs
//! (the open cards, the streams' escape-sequence filters, prompts waiting for their step,
//! the usage tally) and nothing a front end decides.

use std::sync::Arc;

use dsh_agent::record::CONTEXT_COMPACTED;
use dsh_agent::record::{
    AssistantMessageRecord, Chunk, CompactedRecord, CompactingRecord, ContextUsage, HookRanRecord,
    InstructionsRecord, ModelProgressRecord, PlanEntry, Record, ToolCallRecord, ToolProgressRecord,
    ToolResultRecord,
};
use dsh_llm::Prices;
use dsh_session::{Ephemeral, EventType, SessionEvent, SessionId};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{ToolCallView, ToolKindHint, ToolRegistry, ToolResultView};
use serde_json::Value;

use crate::calls::{Calls, OpenCall};
use crate::card::{Card, CardEnd, Closed, Look};
use crate::event::{Answer, Compaction, Shown, ViewEvent};
use crate::present::{call_view, result_view};
use crate::tally::Tally;

/// The events of one call, each named by its session as it is pushed.
struct Out<'a> {
    session: SessionId,
    events: &'a mut Vec<ViewEvent>,
}

impl Out<'_> {
    fn new<'a>(session: &SessionId, events: &'a mut Vec<ViewEvent>) -> Out<'a> {
        Out {
            session: session.clone(),
            events,
        }
    }

    fn push(&mut self, shown: Shown) {
        self.events.push(ViewEvent {
            session: self.session.clone(),
            shown,
        });
    }
}

/// Turns one session's records into view events.
pub struct Projector {
    session: SessionId,
    calls: Calls,
    /// Steps that streamed a chunk since their last finished model call.
    streamed: std::collections::HashSet<(u32, u32)>,
    /// Prompts (and the titles they gave) waiting for their step to show something.
    held: Vec<((u32, u32), Shown)>,
    /// The answer and the reasoning arrive in pieces that may split an escape sequence: each
    /// stream has its own filter.
    text: SafeText,
    reasoning: SafeText,
    tally: Tally,
}

impl Projector {
    /// A projector for `session`, from its start.
    pub fn new(session: SessionId) -> Projector {
        Projector {
            session,
            calls: Calls::default(),
            streamed: Default::default(),
            held: Vec::new(),
            text: SafeText::new(false),
            reasoning: SafeText::new(false),
            tally: Tally::default(),
        }
    }

    /// Goes on from where a projection of the same session left off (a live session after
    /// its replay): the usage totals and the cost carry over.
    pub fn carry_on(&mut self, replayed: &Projector) {
        self.tally = replayed.tally.clone();
    }

    /// The agent's context window, for a compaction shown before any model call said it.
    pub fn set_window(&mut self, window: u64) {
        self.tally.window = Some(window);
    }

    /// The model's prices, for the cost of the calls from here on.
    pub fn set_prices(&mut self, prices: Option<Prices>) {
        self.tally.prices = prices;
    }

    /// What the session's model calls used so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The session it follows.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The latest open card with this call id, whatever its step: the call a child agent's
    /// header names.
    pub fn open_card_of_call(&self, call_id: &str) -> Option<&Card> {
        self.calls.last_of_call(call_id).map(|open| &*open.card)
    }

    /// The open card of this step with this call id that a question or running output is
    /// about (the latest, when a step repeated the id).
    pub fn open_card(&self, turn: u32, step: u32, call_id: &str) -> Option<&Card> {
        self.calls.last(turn, step, call_id).map(|open| &*open.card)
    }

    /// The events of one appended or stored event; `tools` presents its calls.
    pub fn event(&mut self, event: &SessionEvent, tools: &dyn ToolRegistry) -> Vec<ViewEvent> {
        let mut out = Vec::new();
        self.event_into(event, tools, &mut out);
        out
    }

    /// [`Projector::event`], adding the events to `out`: a front end that projects a long
    /// log reuses one buffer.
    pub fn event_into(
        &mut self,
        event: &SessionEvent,
        tools: &dyn ToolRegistry,
        out: &mut Vec<ViewEvent>,
    ) {
        match Record::decode(event) {
            Ok(record) => self.record_into(record, event.time, tools, out),
            Err(err) => tracing::warn!("not shown: {err}"),
        }
    }

    /// Counts what a stored event used, showing nothing: a session resumed without its
    /// history shown needs its totals and cost, not its view. Only model calls and
    /// compactions are decoded.
    pub fn account(&mut self, event: &SessionEvent) {
        let kind = event.kind.as_str();
        if kind != EventType::ASSISTANT_MESSAGE && kind != CONTEXT_COMPACTED {
            return;
        }
        match Record::decode(event) {
            Ok(Record::AssistantMessage(answer)) => self.tally.count(&answer),
            Ok(Record::Compacted(record)) => {
                self.tally.compacted(&record);
            }
            Ok(_) => {}
            Err(err) => tracing::warn!("not counted: {err}"),
        }
    }

    /// The events of one passing notice (running output, the model's progress, a
    /// compaction under way); nothing for a notice the view does not show.
    pub fn ephemeral(&mut self, note: &Ephemeral) -> Vec<ViewEvent> {
        let shown = if let Some(piece) = ToolProgressRecord::decode(note) {
            self.output(piece)
        } else if let Some(progress) = ModelProgressRecord::decode(note) {
            Some(Shown::ModelProgress(ModelProgressRecord {
                tool: SafeText::plain(&progress.tool),
                ..progress
            }))
        } else {
            CompactingRecord::decode(note).map(Shown::Compacting)
        };
        shown.into_iter().map(|s| self.named(s)).collect()
    }

    /// The events of a running call's output (the one notice a front end may hand over
    /// already decoded).
    pub fn progress(&mut self, piece: ToolProgressRecord) -> Vec<ViewEvent> {
        self.output(piece)
            .into_iter()
            .map(|s| self.named(s))
            .collect()
    }

    /// Closes the open cards of `turn` (every open card when `None`) as abandoned, and
    /// drops the prompts still waiting: a prompt, or a replay, is over.
    pub fn close_turn(&mut self, turn: Option<u32>) -> Vec<ViewEvent> {
        let mut events = Vec::new();
        self.abandon(turn, &mut Out::new(&self.session, &mut events));
        self.held.clear();
        events
    }

    /// The events of one decoded record appended at `time` (epoch milliseconds).
    pub fn record(
        &mut self,
        record: Record,
        time: i64,
        tools: &dyn ToolRegistry,
    ) -> Vec<ViewEvent> {
        let mut events = Vec::new();
        self.record_into(record, time, tools, &mut events);
        events
    }

    /// [`Projector::record`], adding the events to `out`.
    pub fn record_into(
        &mut self,
        record: Record,
        time: i64,
        tools: &dyn ToolRegistry,
        events: &mut Vec<ViewEvent>,
    ) {
        let mut out = Out::new(&self.session, events);
        match record {
            Record::TurnStart(start) => out.push(Shown::TurnStarted { turn: start.turn }),
            Record::StepStart(at) => out.push(Shown::StepStarted {
                turn: at.turn,
                step: at.step,
            }),
            Record::UserMessage(user) => {
                let prompt = Shown::Prompt {
                    text: SafeText::plain(&user.message.text),
                    source: user.message.source,
                };
                self.held.push(((user.turn, user.step), prompt));
            }
            Record::Title(title) => {
                let title = Shown::Title(SafeText::plain(&title.title));
                // It follows the prompt that gave it, which may be waiting.
                match self.held.last().map(|(step, _)| *step) {
                    Some(step) => self.held.push((step, title)),
                    None => out.push(title),
                }
            }
            Record::AssistantChunk(chunk) => {
                self.release((chunk.turn, chunk.step), &mut out);
                self.streamed.insert((chunk.turn, chunk.step));
                match chunk.chunk {
                    Chunk::ReasoningDelta(text) => {
                        let piece = self.reasoning.push(text.as_bytes());
                        if !piece.is_empty() {
                            out.push(Shown::Reasoning(piece));
                        }
                    }
                    Chunk::TextDelta(text) => {
                        let piece = self.text.push(text.as_bytes());
                        if !piece.is_empty() {
                            out.push(Shown::Text(piece));
                        }
                    }
                }
            }
            Record::AssistantMessage(answer) => {
                self.release((answer.turn, answer.step), &mut out);
                out.push(Shown::Answered(self.answered(answer)));
            }
            Record::ToolCall(call) => {
                self.release((call.turn, call.step), &mut out);
                out.push(Shown::CallOpened(self.open(call, time, tools)));
            }
            Record::ToolResult(result) => self.result(result, time, tools, &mut out),
            Record::StepEnd(at) => {
                // A prompt whose step ended before any answer is still part of the
                // conversation (the model sees it too): shown at its step's end.
                self.release((at.turn, at.step), &mut out);
                self.streamed.remove(&(at.turn, at.step));
            }
            Record::TurnEnd(end) => {
                self.abandon(Some(end.turn), &mut out);
                self.held.clear();
                out.push(Shown::TurnEnded {
                    turn: end.turn,
                    reason: end.reason,
                    answered: self.tally.answered,
                });
            }
            Record::Compacted(record) => out.push(Shown::Compacted(self.compacted(record))),
            Record::Plan(plan) => out.push(Shown::Plan {
                turn: plan.turn,
                step: plan.step,
                entries: plan
                    .entries
                    .into_iter()
                    .map(|entry| PlanEntry {
                        content: SafeText::plain(&entry.content),
                        ..entry
                    })
                    .collect(),
            }),
            Record::Instructions(context) => {
                let warnings = self.warnings(&context);
                if !warnings.is_empty() {
                    out.push(Shown::Warnings(warnings));
                }
            }
            // A child's work is its own log's, which a front end follows as it happens.
            Record::ConfigChanged(_)
            | Record::PermissionRule(_)
            | Record::Subagent(_)
            | Record::Other => {}
            Record::HookRan(ran) => out.push(Shown::HookRan(HookRanRecord {
                event: SafeText::plain(&ran.event),
                command: SafeText::plain(&ran.command),
                decision: SafeText::plain(&ran.decision),
                error: ran.error.as_deref().map(SafeText::plain),
                ..ran
            })),
        }
    }

    fn named(&self, shown: Shown) -> ViewEvent {
        ViewEvent {
            session: self.session.clone(),
            shown,
        }
    }

    /// The prompts (and titles) waiting for `step`, now that it shows something.
    fn release(&mut self, step: (u32, u32), out: &mut Out<'_>) {
        if self.held.iter().any(|(s, _)| *s == step) {
            for (s, shown) in std::mem::take(&mut self.held) {
                if s == step {
                    out.push(shown);
                } else {
                    self.held.push((s, shown));
                }
            }
        }
    }

    fn answered(&mut self, answer: AssistantMessageRecord) -> Answer {
        // The streams are plain text (no colour kept), so ending them emits nothing.
        self.text.finish();
        self.reasoning.finish();
        let streamed = self.streamed.remove(&(answer.turn, answer.step));
        self.tally.count(&answer);
        Answer::new(
            (answer.turn, answer.step),
            answer.message.content,
            answer.message.reasoning.unwrap_or_default(),
            streamed,
            answer.usage,
            answer.context,
        )
    }

    fn compacted(&mut self, record: CompactedRecord) -> Compaction {
        let context = self.tally.compacted(&record);
        Compaction {
            through_seq: record.through_seq,
            trigger: record.trigger,
            tokens_before: record.tokens_before,
            tokens_after: record.tokens_after,
            summary: SafeText::plain(&record.summary),
            files_read: record.files_read,
            files_modified: record.files_modified,
            usage: record.usage,
            context,
        }
    }

    /// What building the system message warned about, and a window the system message alone
    /// fills (a local model's default, which every request would overflow).
    fn warnings(&self, context: &InstructionsRecord) -> Vec<String> {
        let mut warnings: Vec<String> = context
            .warnings
            .iter()
            .map(|w| SafeText::plain(w))
            .collect();
        let tokens = context.text.len() as u64 / ContextUsage::BYTES_PER_TOKEN;
        if let Some(window) = self.tally.window.filter(|w| tokens >= *w) {
            warnings.push(format!(
                "the system message alone is ~{tokens} tokens, more than the context window of {window} tokens: set context_window (--context-window) to the model's real window"
            ));
        }
        warnings
    }

    fn open(&mut self, call: ToolCallRecord, time: i64, tools: &dyn ToolRegistry) -> Arc<Card> {
        let id = self.calls.next_id(&call);
        // The presenter parsed the arguments already; a call it does not present is parsed
        // here.
        let parsed = || {
            serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone()))
        };
        let (title, kind, look, locations, raw_input) = match call_view(tools, &call) {
            Some(ToolCallView::Terminal {
                command,
                description,
                cwd,
                raw_input,
            }) => {
                let command = SafeText::plain_owned(command);
                let look = Look::Terminal {
                    command: command.clone(),
                    description: description.map(SafeText::plain_owned),
                    cwd,
                };
                (command, ToolKindHint::Execute, look, Vec::new(), raw_input)
            }
            Some(ToolCallView::Generic {
                title,
                summary,
                kind,
                raw_input,
                content,
                locations,
            }) => {
                let look = Look::Generic {
                    summary: summary.map(SafeText::plain_owned),
                    content: content.into_iter().map(SafeText::plain_owned).collect(),
                };
                (
                    SafeText::plain_owned(title),
                    kind,
                    look,
                    locations,
                    raw_input,
                )
            }
            None => {
                let look = Look::Generic {
                    summary: None,
                    content: Vec::new(),
                };
                let name = SafeText::plain(&call.name);
                (name, ToolKindHint::Other, look, Vec::new(), Value::Null)
            }
        };
        // Arguments that are not JSON are shown as the text the model sent.
        let raw_input = match raw_input {
            Value::Null => parsed(),
            given => given,
        };
        let card = Arc::new(Card {
            id,
            name: SafeText::plain(&call.name),
            title,
            kind,
            look,
            locations,
            raw_input,
            opened_at: time,
            call,
        });
        self.calls.insert(OpenCall { card: card.clone() });
        card
    }

    fn result(
        &mut self,
        result: ToolResultRecord,
        time: i64,
        tools: &dyn ToolRegistry,
        out: &mut Out<'_>,
    ) {
        let id = match self.calls.first(result.turn, result.step, &result.call_id) {
            Some(id) => id.clone(),
            None => {
                // A result whose call this view never saw (a repaired log): a stand-in card
                // opens first, so the result still closes a card.
                let stand_in = ToolCallRecord {
                    turn: result.turn,
                    step: result.step,
                    call_id: result.call_id.clone(),
                    name: "tool".into(),
                    arguments: String::new(),
                };
                let card = self.open(stand_in, time, tools);
                let id = card.id.clone();
                out.push(Shown::CallOpened(card));
                id
            }
        };
        let Some(open) = self.calls.take(&id) else {
            return;
        };
        let shown = result_view(tools, &open.card.call, &result);
        let end = match result.is_error {
            true => CardEnd::Failed {
                content: result.content,
                code: result.error_code,
                shown,
            },
            false => CardEnd::Completed {
                shown: shown.unwrap_or_else(|| ToolResultView::Generic {
                    content: vec![result.content.clone()],
                    summary: None,
                }),
                content: result.content,
            },
        };
        out.push(Shown::CallClosed(Closed {
            elapsed_ms: Some(time - open.card.opened_at),
            card: open.card,
            end,
        }));
    }

    /// Running output, for the latest open card of its step and call id.
    fn output(&self, piece: ToolProgressRecord) -> Option<Shown> {
        let open = self.calls.last(piece.turn, piece.step, &piece.call_id)?;
        Some(Shown::CallOutput {
            card: open.card.id.clone(),
            call_id: piece.call_id,
            output: piece.output,
        })
    }

    /// Closes the open cards of `turn` (every open card when `None`) as abandoned.
    fn abandon(&mut self, turn: Option<u32>, out: &mut Out<'_>) {
        for id in self.calls.of_turn(turn) {
            if let Some(open) = self.calls.take(&id) {
                out.push(Shown::CallClosed(Closed {
                    card: open.card,
                    end: CardEnd::Abandoned,
                    elapsed_ms: None,
                }));
            }
        }
    }
}
