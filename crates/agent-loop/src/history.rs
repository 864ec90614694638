//! The request history: a projection of the session log into model messages, extended event
//! by event so that a step costs what was appended since the last one, not the whole log.
//!
//! Every `user/message` is part of the history, whatever became of its turn: a prompt whose
//! turn failed before the model answered (an HTTP 500, a cancel) is still what the user said,
//! and a follow-up such as "try again" means nothing without it. Consecutive user messages
//! are merged into one, blank-line separated, because some servers refuse two in a row
//! (DeepSeek's reasoner, chat templates that demand alternating roles).
//!
//! A prompt whose turn was cancelled before any answer is followed by [`CANCELLED_NOTE`], so
//! the model knows the request was stopped rather than ignored, and does not take it up
//! unasked.
//!
//! The projection also keeps the log's last `context/instructions` record, the system text
//! the agent sends while it is current. A `context/compacted` record starts the history again
//! from its summary and the user messages it kept: the log keeps everything, the model sees
//! what the compaction left.

use std::sync::Arc;

use dsh_agent::TurnEndReason;
use dsh_agent::record::{ContextUsage, InstructionsRecord, Record, ToolResultRecord, TurnEnd};
use dsh_llm::Message;
use dsh_session::SessionEvent;

/// What follows, in the history, a prompt whose turn was cancelled before any answer.
pub const CANCELLED_NOTE: &str = "[dsh: the user cancelled this request before it was answered]";

/// The model history of one session, as of the events read so far.
#[derive(Default)]
pub(crate) struct Projection {
    /// The seq of the next event to read.
    next_seq: u64,
    messages: Vec<Message>,
    instructions: Option<InstructionsRecord>,
    /// Since the last compaction: what a compaction needs besides the messages.
    since: Since,
    /// How many tool outputs, oldest first, requests show as pruned (see [`Projection::prune`]).
    pruned: usize,
}

/// What a pruned tool output reads as in a request, with its size.
pub(crate) fn pruned_note(bytes: usize) -> String {
    format!(
        "[dsh: this output ({bytes} bytes) was pruned from the request to save context; the session log keeps it. Run the call again if you need it.]"
    )
}

/// What the history holds since its last compaction (or the log's start).
#[derive(Clone, Default)]
pub(crate) struct Since {
    /// Every user message, in order, unmerged.
    pub users: Vec<String>,
    /// Every tool call: its tool's name and its arguments.
    pub calls: Vec<(String, String)>,
    /// The context after the last model call that recorded one.
    pub context: Option<ContextUsage>,
    /// How many user messages, answers and tool results were read: none means there is
    /// nothing a compaction could summarise.
    pub read: usize,
}

impl Projection {
    /// The seq of the next event this projection wants.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Reads `events`, which continue the log at [`Projection::next_seq`]; an event already
    /// read, or one past a gap, is ignored. A payload that does not fit its kind is skipped
    /// (and logged): one damaged record must not cost the session its history.
    pub(crate) fn extend(&mut self, events: &[Arc<SessionEvent>]) {
        for event in events {
            if event.seq != self.next_seq {
                continue;
            }
            self.next_seq += 1;
            match Record::decode(event) {
                Ok(record) => self.read(record),
                Err(err) => tracing::warn!("left out of the model history: {err}"),
            }
        }
    }

    fn read(&mut self, record: Record) {
        match record {
            Record::UserMessage(user) => {
                let text = user.message.text;
                self.since.users.push(text.clone());
                self.since.read += 1;
                match self.messages.last_mut() {
                    Some(Message::User { content }) => {
                        content.push_str("\n\n");
                        content.push_str(&text);
                    }
                    Some(_) | None => self.messages.push(Message::User { content: text }),
                }
            }
            Record::AssistantMessage(answer) => {
                if answer.context.is_some() {
                    self.since.context = answer.context;
                }
                self.since.read += 1;
                if !answer.message.is_empty() {
                    self.messages.push(answer.message.to_message());
                }
            }
            Record::ToolResult(ToolResultRecord {
                call_id, content, ..
            }) => {
                self.since.read += 1;
                self.messages.push(Message::Tool { call_id, content });
            }
            Record::Instructions(record) => self.instructions = Some(record),
            // From here the model's history starts again: the summary and the kept messages
            // stand for everything before.
            Record::Compacted(record) => {
                self.messages = vec![Message::User {
                    content: record.opening(),
                }];
                self.since = Since {
                    users: record.kept,
                    ..Since::default()
                };
                self.pruned = 0;
            }
            Record::ToolCall(call) => self.since.calls.push((call.name, call.arguments)),
            Record::TurnEnd(TurnEnd {
                reason: TurnEndReason::Aborted { .. },
                ..
            }) => {
                if let Some(Message::User { content }) = self.messages.last_mut() {
                    content.push_str("\n\n");
                    content.push_str(CANCELLED_NOTE);
                }
            }
            Record::TurnStart(_)
            | Record::TurnEnd(_)
            | Record::StepStart(_)
            | Record::StepEnd(_)
            | Record::AssistantChunk(_)
            | Record::Title(_)
            | Record::ConfigChanged(_)
            | Record::Plan(_)
            | Record::PermissionRule(_)
            | Record::Subagent(_)
            | Record::HookRan(_)
            | Record::Other => {}
        }
    }

    /// The model messages of the events read, in log order, the pruned tool outputs replaced
    /// by a note.
    pub(crate) fn messages(&self) -> Vec<Message> {
        let mut messages = self.messages.clone();
        let mut left = self.pruned;
        for message in &mut messages {
            if left == 0 {
                break;
            }
            if let Message::Tool { content, .. } = message {
                left -= 1;
                let note = pruned_note(content.len());
                if content.len() > note.len() {
                    *content = note;
                }
            }
        }
        messages
    }

    /// Prunes old tool output from requests: the outputs older than the most recent
    /// `keep_bytes` of output (and never the latest) are shown as a note, once that frees at
    /// least `min_bytes`. The
    /// boundary moves only in such jumps, so the request's prefix — which servers cache —
    /// stays the same between them.
    pub(crate) fn prune(&mut self, keep_bytes: usize, min_bytes: usize) {
        let sizes: Vec<usize> = self
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.len()),
                Message::System { .. } | Message::User { .. } | Message::Assistant { .. } => None,
            })
            .collect();
        // The oldest output the kept suffix starts at.
        let mut kept = 0;
        let mut boundary = sizes.len();
        for (i, size) in sizes.iter().enumerate().rev() {
            if kept + size > keep_bytes {
                break;
            }
            kept += size;
            boundary = i;
        }
        // The latest output is what the model acts on next: it is never pruned.
        let boundary = boundary.min(sizes.len().saturating_sub(1));
        if boundary <= self.pruned {
            return;
        }
        let freed: usize = sizes[self.pruned..boundary].iter().sum();
        if freed >= min_bytes {
            self.pruned = boundary;
        }
    }

    /// What the history holds since its last compaction.
    pub(crate) fn since(&self) -> &Since {
        &self.since
    }

    /// The seq of the last event read (none before the first).
    pub(crate) fn last_seq(&self) -> Option<u64> {
        self.next_seq.checked_sub(1)
    }

    /// The last `context/instructions` record read.
    pub(crate) fn instructions(&self) -> Option<&InstructionsRecord> {
        self.instructions.as_ref()
    }
}

/// The model messages `events` stand for, in log order (a projection of a whole log).
#[cfg(test)]
pub(crate) fn project(events: &[Arc<SessionEvent>]) -> Vec<Message> {
    let mut projection = Projection::default();
    projection.extend(events);
    projection.messages()
}

#[cfg(test)]
mod tests;
