//! Recorded sessions as scripts: every completed assistant message becomes an entry,
//! so a session can be replayed without a server.

use std::sync::Arc;

use dsh_llm::{FinishReason, ModelError, ModelErrorKind};
use dsh_session::{EventType, SessionEvent, TurnEnd, TurnEndReason};
use serde::Deserialize;

use crate::script::{Ending, Entry, Item, ItemKind, Matcher, ReplayScript};

#[derive(Deserialize)]
struct AssistantEvent {
    message: AssistantMessage,
    #[serde(default)]
    interrupted: bool,
}

#[derive(Deserialize)]
struct AssistantMessage {
    #[serde(default)]
    content: String,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RecordedCall>,
}

#[derive(Deserialize)]
struct RecordedCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct UserEvent {
    message: UserMessage,
}

#[derive(Deserialize)]
struct UserMessage {
    content: String,
}

fn entry(stream: Vec<Item>, ending: Ending) -> Entry {
    Entry {
        matcher: Matcher::default(),
        stream,
        ending,
        usage: None,
        item_delay_ms: 0,
        ready_file: None,
    }
}

fn item(kind: ItemKind) -> Item {
    Item {
        kind,
        delay_ms: None,
        repeat: 1,
    }
}

impl ReplayScript {
    /// Turns a recorded session log into a script named `name`.
    pub fn from_session_events(name: &str, events: &[Arc<SessionEvent>]) -> ReplayScript {
        let mut entries = Vec::new();
        let mut prompt = None;
        // Entries of the current turn whose finish depends on how the turn ends.
        let mut pending_final: Option<usize> = None;
        let mut step_has_message = false;
        for event in events {
            match event.kind.as_str() {
                EventType::TURN_START => {
                    pending_final = None;
                    step_has_message = false;
                }
                EventType::STEP_START => step_has_message = false,
                EventType::USER_MESSAGE => {
                    if prompt.is_none()
                        && let Ok(user) = serde_json::from_str::<UserEvent>(event.data.get())
                    {
                        prompt = Some(user.message.content);
                    }
                }
                EventType::ASSISTANT_MESSAGE => {
                    let Ok(recorded) = serde_json::from_str::<AssistantEvent>(event.data.get())
                    else {
                        continue;
                    };
                    if recorded.interrupted {
                        continue;
                    }
                    step_has_message = true;
                    let message = recorded.message;
                    let mut stream = Vec::new();
                    if let Some(reasoning) = message.reasoning.filter(|r| !r.is_empty()) {
                        stream.push(item(ItemKind::Reasoning(vec![reasoning])));
                    }
                    if !message.content.is_empty() {
                        stream.push(item(ItemKind::Text(vec![message.content])));
                    }
                    let has_calls = !message.tool_calls.is_empty();
                    for call in message.tool_calls {
                        stream.push(item(ItemKind::ToolCall {
                            name: call.name,
                            arguments: call.arguments,
                            id: Some(call.id),
                        }));
                    }
                    let finish = if has_calls {
                        FinishReason::ToolCalls
                    } else {
                        FinishReason::Stop
                    };
                    entries.push(entry(stream, Ending::Finish(finish)));
                    pending_final = (!has_calls).then_some(entries.len() - 1);
                }
                EventType::TURN_END => {
                    let Ok(end) = serde_json::from_str::<TurnEnd>(event.data.get()) else {
                        continue;
                    };
                    match end.reason {
                        TurnEndReason::MaxTokens | TurnEndReason::Refusal => {
                            if let Some(i) = pending_final {
                                let reason = if end.reason == TurnEndReason::MaxTokens {
                                    FinishReason::Length
                                } else {
                                    FinishReason::ContentFilter
                                };
                                entries[i].ending = Ending::Finish(reason);
                            }
                        }
                        TurnEndReason::Error { failure } if !step_has_message => {
                            let kind: ModelErrorKind = serde_json::from_value(
                                serde_json::Value::String(failure.code.clone()),
                            )
                            .unwrap_or(ModelErrorKind::Server);
                            let mut error = ModelError::new(kind, failure.message);
                            error.status = failure.status;
                            entries.push(entry(Vec::new(), Ending::Error(error)));
                        }
                        _ => {}
                    }
                    pending_final = None;
                }
                _ => {}
            }
        }
        ReplayScript {
            name: name.to_owned(),
            prompt,
            entries,
        }
    }
}
