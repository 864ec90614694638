//! The request history: a projection of the session log into model messages, extended event
//! by event so that a step costs what was appended since the last one, not the whole log.
//!
//! The omission rule needs the step markers: the `user/message`s of a closed step that has no
//! `assistant/message` are left out. A prompt cancelled or failed before the model answered is
//! never shown to the model later — it could act on words the user withdrew. Such a message is
//! held *undecided* until its step gets an answer (kept) or closes without one (left out); while
//! its step is open it is shown, which is how the step's own request sees it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dsh_agent::record::{Record, StepMark, ToolResultRecord};
use dsh_llm::Message;
use dsh_session::SessionEvent;

/// A turn and step.
type Step = (u32, u32);

/// One message, and the step whose answer decides it (`None`: decided, kept).
struct Slot {
    message: Message,
    undecided: Option<Step>,
}

/// The model history of one session, as of the events read so far.
#[derive(Default)]
pub(crate) struct Projection {
    /// The seq of the next event to read.
    next_seq: u64,
    slots: Vec<Slot>,
    /// Undecided slots by step.
    pending: HashMap<Step, Vec<usize>>,
    answered: HashSet<Step>,
    closed: HashSet<Step>,
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
                let key = (user.turn, user.step);
                let decided = self.answered.contains(&key);
                let index = self.slots.len();
                self.slots.push(Slot {
                    message: Message::User {
                        content: user.message.text,
                    },
                    undecided: (!decided).then_some(key),
                });
                if !decided {
                    self.pending.entry(key).or_default().push(index);
                }
            }
            Record::AssistantMessage(answer) => {
                let key = (answer.turn, answer.step);
                self.answered.insert(key);
                for index in self.pending.remove(&key).unwrap_or_default() {
                    if let Some(slot) = self.slots.get_mut(index) {
                        slot.undecided = None;
                    }
                }
                if !answer.message.is_empty() {
                    self.slots.push(Slot {
                        message: answer.message.to_message(),
                        undecided: None,
                    });
                }
            }
            Record::ToolResult(ToolResultRecord {
                call_id, content, ..
            }) => self.slots.push(Slot {
                message: Message::Tool { call_id, content },
                undecided: None,
            }),
            Record::StepEnd(StepMark { turn, step }) => {
                self.closed.insert((turn, step));
            }
            Record::TurnStart(_)
            | Record::TurnEnd(_)
            | Record::StepStart(_)
            | Record::AssistantChunk(_)
            | Record::ToolCall(_)
            | Record::Other => {}
        }
    }

    /// The model messages of the events read, in log order.
    pub(crate) fn messages(&self) -> Vec<Message> {
        self.slots
            .iter()
            .filter(|slot| slot.undecided.is_none_or(|key| !self.closed.contains(&key)))
            .map(|slot| slot.message.clone())
            .collect()
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
