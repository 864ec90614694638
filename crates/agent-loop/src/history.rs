//! The request history: a projection of the session log into model messages.
//!
//! Computed over every event, not over `Session::history()`, because the omission rule needs
//! the step markers: the `user/message`s of a closed step that has no `assistant/message` are
//! left out. A prompt cancelled or failed before the model answered is never shown to the
//! model later — it could act on words the user withdrew.

use std::collections::HashSet;
use std::sync::Arc;

use dsh_llm::Message;
use dsh_session::{EventType, SessionEvent};
use serde::Deserialize;

#[derive(Deserialize)]
struct Position {
    turn: u32,
    step: u32,
}

#[derive(Deserialize)]
struct UserPayload {
    turn: u32,
    step: u32,
    message: UserText,
}

#[derive(Deserialize)]
struct UserText {
    text: String,
}

#[derive(Deserialize)]
struct AssistantPayload {
    message: Message,
}

#[derive(Deserialize)]
struct ToolResultPayload {
    call_id: String,
    content: String,
}

/// The model messages the log stands for, in log order.
pub(crate) fn project(events: &[Arc<SessionEvent>]) -> Vec<Message> {
    let mut closed = HashSet::new();
    let mut answered = HashSet::new();
    for event in events {
        let kind = event.kind.as_str();
        if (kind == EventType::STEP_END || kind == EventType::ASSISTANT_MESSAGE)
            && let Ok(at) = serde_json::from_str::<Position>(event.data.get())
        {
            let key = (at.turn, at.step);
            if kind == EventType::STEP_END {
                closed.insert(key);
            } else {
                answered.insert(key);
            }
        }
    }
    let mut messages = Vec::new();
    for event in events {
        match event.kind.as_str() {
            EventType::USER_MESSAGE => {
                if let Ok(user) = serde_json::from_str::<UserPayload>(event.data.get()) {
                    let key = (user.turn, user.step);
                    if closed.contains(&key) && !answered.contains(&key) {
                        continue;
                    }
                    messages.push(Message::User {
                        content: user.message.text,
                    });
                }
            }
            EventType::ASSISTANT_MESSAGE => {
                if let Ok(answer) = serde_json::from_str::<AssistantPayload>(event.data.get())
                    && let Message::Assistant {
                        content,
                        reasoning,
                        tool_calls,
                    } = &answer.message
                {
                    let empty = content.trim().is_empty()
                        && reasoning.as_deref().is_none_or(|r| r.trim().is_empty())
                        && tool_calls.is_empty();
                    if !empty {
                        messages.push(answer.message);
                    }
                }
            }
            EventType::TOOL_RESULT => {
                if let Ok(result) = serde_json::from_str::<ToolResultPayload>(event.data.get()) {
                    messages.push(Message::Tool {
                        call_id: result.call_id,
                        content: result.content,
                    });
                }
            }
            _ => {}
        }
    }
    messages
}
