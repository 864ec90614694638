//! Request validation shared by every provider: an agent bug fails the same way
//! against the replay model as against a real server, before any I/O.

use std::collections::HashSet;

use crate::error::{ModelError, ModelErrorKind};
use crate::types::{Message, ModelRequest};

fn invalid(reason: String) -> ModelError {
    ModelError::new(
        ModelErrorKind::BadRequest,
        format!("invalid model request: {reason}"),
    )
}

fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ModelRequest {
    /// Checks the request; every failure is a `bad_request` whose message starts with
    /// `invalid model request:`.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.messages.is_empty() {
            return Err(invalid("it has no messages".into()));
        }
        // Calls of the latest assistant message still waiting for their one answer.
        let mut open: Vec<String> = Vec::new();
        for (index, message) in self.messages.iter().enumerate() {
            match message {
                Message::Tool { call_id, .. } => {
                    let Some(pos) = open.iter().position(|id| id == call_id) else {
                        return Err(invalid(format!(
                            "message {index} answers tool call {call_id:?}, which no earlier assistant message left unanswered"
                        )));
                    };
                    open.remove(pos);
                }
                Message::User { .. } | Message::Assistant { .. } | Message::System { .. } => {
                    if !matches!(message, Message::System { .. })
                        && let Some(id) = open.first()
                    {
                        return Err(invalid(format!(
                            "tool call {id:?} is not answered before message {index}"
                        )));
                    }
                    if let Message::Assistant { tool_calls, .. } = message {
                        open = tool_calls.iter().map(|c| c.id.clone()).collect();
                    }
                }
            }
        }
        if let Some(id) = open.first() {
            return Err(invalid(format!(
                "tool call {id:?} of the last assistant message is not answered"
            )));
        }
        let mut names = HashSet::new();
        for tool in &self.tools {
            if !valid_tool_name(&tool.name) {
                return Err(invalid(format!(
                    "tool name {:?} must match ^[A-Za-z0-9_-]{{1,64}}$",
                    tool.name
                )));
            }
            if !names.insert(tool.name.as_str()) {
                return Err(invalid(format!("tool {:?} is offered twice", tool.name)));
            }
            if !tool.parameters.is_object() {
                return Err(invalid(format!(
                    "the parameters of tool {:?} are not a JSON object",
                    tool.name
                )));
            }
        }
        if let Some(t) = self.params.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(invalid(format!("temperature {t} is outside 0..=2")));
        }
        if self.params.max_tokens == Some(0) {
            return Err(invalid("max_tokens is 0".into()));
        }
        Ok(())
    }
}
