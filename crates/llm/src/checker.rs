//! `StreamChecker`: enforces the stream contract (see the crate docs) on any provider's
//! output. Tests run every provider through it; the agent loop may run it in debug builds.

use crate::error::ModelError;
use crate::types::ModelEvent;

/// A broken stream contract, naming the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model stream contract violated at item {position}: {rule}")]
pub struct ContractViolation {
    /// 0-based index of the offending item (or the item count, at the end).
    pub position: usize,
    /// The rule broken.
    pub rule: ContractRule,
}

/// The rules of the stream contract, one variant per way to break it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContractRule {
    /// Something followed the terminal `Finish` or `Err`.
    #[error("an item after the terminal Finish or Err")]
    ItemAfterEnd,
    /// Something other than `Finish` followed `Usage`.
    #[error("Usage must come immediately before Finish")]
    UsageNotLast,
    /// A reasoning or text delta was empty.
    #[error("an empty delta")]
    EmptyDelta,
    /// A call started out of order.
    #[error("ToolCallStart index {index} where {expected} was next")]
    StartOutOfOrder {
        /// The index given.
        index: u32,
        /// The index that was next.
        expected: usize,
    },
    /// An arguments fragment was empty.
    #[error("an empty argument fragment")]
    EmptyFragment,
    /// Arguments arrived for a call already ended.
    #[error("arguments for ended call {index}")]
    ArgumentsAfterEnd {
        /// The call.
        index: u32,
    },
    /// Arguments arrived for a call that never started.
    #[error("arguments for call {index}, which never started")]
    ArgumentsBeforeStart {
        /// The call.
        index: u32,
    },
    /// A call's end named another id or tool than its start.
    #[error("ToolCallEnd {index} names another call than its start")]
    EndNamesAnotherCall {
        /// The call.
        index: u32,
    },
    /// A call's end carried arguments other than its fragments.
    #[error("ToolCallEnd {index} arguments differ from the concatenated fragments")]
    EndArgumentsDiffer {
        /// The call.
        index: u32,
    },
    /// A call ended twice.
    #[error("a second ToolCallEnd for call {index}")]
    SecondEnd {
        /// The call.
        index: u32,
    },
    /// A call ended that never started.
    #[error("ToolCallEnd for call {index}, which never started")]
    EndBeforeStart {
        /// The call.
        index: u32,
    },
    /// `Usage` came twice.
    #[error("a second Usage")]
    SecondUsage,
    /// The stream ended with a call still open.
    #[error("call {index} has no ToolCallEnd before the stream ends")]
    CallLeftOpen {
        /// The call.
        index: usize,
    },
    /// The stream ended without `Finish` or `Err`.
    #[error("the stream ended without Finish or Err")]
    NoEnd,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Call {
    Open {
        id: String,
        name: String,
        args: String,
    },
    Ended,
}

/// Observes a stream item by item.
#[derive(Debug, Default)]
pub struct StreamChecker {
    position: usize,
    calls: Vec<Call>,
    usage_seen: bool,
    terminated: bool,
}

impl StreamChecker {
    /// A checker at the start of a stream.
    pub fn new() -> StreamChecker {
        StreamChecker::default()
    }

    fn violation(&self, rule: ContractRule) -> Result<(), ContractViolation> {
        Err(ContractViolation {
            position: self.position,
            rule,
        })
    }

    /// Checks the next item.
    pub fn observe(
        &mut self,
        item: &Result<ModelEvent, ModelError>,
    ) -> Result<(), ContractViolation> {
        let result = self.check(item);
        self.position += 1;
        result
    }

    fn check(&mut self, item: &Result<ModelEvent, ModelError>) -> Result<(), ContractViolation> {
        if self.terminated {
            return self.violation(ContractRule::ItemAfterEnd);
        }
        let event = match item {
            Err(_) => {
                self.terminated = true;
                return Ok(());
            }
            Ok(event) => event,
        };
        if self.usage_seen && !matches!(event, ModelEvent::Finish { .. }) {
            return self.violation(ContractRule::UsageNotLast);
        }
        match event {
            ModelEvent::ReasoningDelta(s) | ModelEvent::TextDelta(s) if s.is_empty() => {
                self.violation(ContractRule::EmptyDelta)
            }
            ModelEvent::ReasoningDelta(_) | ModelEvent::TextDelta(_) => Ok(()),
            ModelEvent::ToolCallStart { index, id, name } => {
                if *index as usize != self.calls.len() {
                    return self.violation(ContractRule::StartOutOfOrder {
                        index: *index,
                        expected: self.calls.len(),
                    });
                }
                self.calls.push(Call::Open {
                    id: id.clone(),
                    name: name.clone(),
                    args: String::new(),
                });
                Ok(())
            }
            ModelEvent::ToolCallArgumentsDelta { index, fragment } => {
                if fragment.is_empty() {
                    return self.violation(ContractRule::EmptyFragment);
                }
                match self.calls.get_mut(*index as usize) {
                    Some(Call::Open { args, .. }) => {
                        args.push_str(fragment);
                        Ok(())
                    }
                    Some(Call::Ended) => {
                        self.violation(ContractRule::ArgumentsAfterEnd { index: *index })
                    }
                    None => self.violation(ContractRule::ArgumentsBeforeStart { index: *index }),
                }
            }
            ModelEvent::ToolCallEnd {
                index,
                id,
                name,
                arguments,
            } => {
                let i = *index as usize;
                match self.calls.get(i) {
                    Some(Call::Open {
                        id: open_id,
                        name: open_name,
                        args,
                    }) => {
                        if open_id != id || open_name != name {
                            return self
                                .violation(ContractRule::EndNamesAnotherCall { index: *index });
                        }
                        if args != arguments {
                            return self
                                .violation(ContractRule::EndArgumentsDiffer { index: *index });
                        }
                        self.calls[i] = Call::Ended;
                        Ok(())
                    }
                    Some(Call::Ended) => self.violation(ContractRule::SecondEnd { index: *index }),
                    None => self.violation(ContractRule::EndBeforeStart { index: *index }),
                }
            }
            ModelEvent::Usage(_) => {
                if self.usage_seen {
                    return self.violation(ContractRule::SecondUsage);
                }
                self.open_calls()?;
                self.usage_seen = true;
                Ok(())
            }
            ModelEvent::Finish { .. } => {
                self.open_calls()?;
                self.terminated = true;
                Ok(())
            }
        }
    }

    fn open_calls(&self) -> Result<(), ContractViolation> {
        match self
            .calls
            .iter()
            .position(|c| matches!(c, Call::Open { .. }))
        {
            Some(i) => self.violation(ContractRule::CallLeftOpen { index: i }),
            None => Ok(()),
        }
    }

    /// Checks the end of the stream: it must have ended with `Finish` or `Err`.
    pub fn end(self) -> Result<(), ContractViolation> {
        if self.terminated {
            Ok(())
        } else {
            self.violation(ContractRule::NoEnd)
        }
    }
}
