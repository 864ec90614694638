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
    /// What was wrong.
    pub rule: String,
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

    fn violation(&self, rule: impl Into<String>) -> Result<(), ContractViolation> {
        Err(ContractViolation {
            position: self.position,
            rule: rule.into(),
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
            return self.violation("an item after the terminal Finish or Err");
        }
        let event = match item {
            Err(_) => {
                self.terminated = true;
                return Ok(());
            }
            Ok(event) => event,
        };
        if self.usage_seen && !matches!(event, ModelEvent::Finish { .. }) {
            return self.violation("Usage must come immediately before Finish");
        }
        match event {
            ModelEvent::ReasoningDelta(s) | ModelEvent::TextDelta(s) if s.is_empty() => {
                self.violation("an empty delta")
            }
            ModelEvent::ReasoningDelta(_) | ModelEvent::TextDelta(_) => Ok(()),
            ModelEvent::ToolCallStart { index, id, name } => {
                if *index as usize != self.calls.len() {
                    return self.violation(format!(
                        "ToolCallStart index {index} where {} was next",
                        self.calls.len()
                    ));
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
                    return self.violation("an empty argument fragment");
                }
                match self.calls.get_mut(*index as usize) {
                    Some(Call::Open { args, .. }) => {
                        args.push_str(fragment);
                        Ok(())
                    }
                    Some(Call::Ended) => {
                        self.violation(format!("arguments for ended call {index}"))
                    }
                    None => {
                        self.violation(format!("arguments for call {index}, which never started"))
                    }
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
                            return self.violation(format!(
                                "ToolCallEnd {index} names another call than its start"
                            ));
                        }
                        if args != arguments {
                            return self.violation(format!("ToolCallEnd {index} arguments differ from the concatenated fragments"));
                        }
                        self.calls[i] = Call::Ended;
                        Ok(())
                    }
                    Some(Call::Ended) => {
                        self.violation(format!("a second ToolCallEnd for call {index}"))
                    }
                    None => {
                        self.violation(format!("ToolCallEnd for call {index}, which never started"))
                    }
                }
            }
            ModelEvent::Usage(_) => {
                if self.usage_seen {
                    return self.violation("a second Usage");
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
            Some(i) => self.violation(format!(
                "call {i} has no ToolCallEnd before the stream ends"
            )),
            None => Ok(()),
        }
    }

    /// Checks the end of the stream: it must have ended with `Finish` or `Err`.
    pub fn end(self) -> Result<(), ContractViolation> {
        if self.terminated {
            Ok(())
        } else {
            self.violation("the stream ended without Finish or Err")
        }
    }
}
