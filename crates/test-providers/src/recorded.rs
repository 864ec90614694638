//! Recorded sessions as replay scripts: every completed assistant message becomes an entry,
//! so a session can be replayed without a server. A test tool: it reads the agent's records,
//! which the replay provider itself has no business knowing.

use std::sync::Arc;

use dsh_agent::record::Record;
use dsh_llm::{FinishReason, ModelError, ModelErrorKind};
use dsh_session::{SessionEvent, TurnEndReason};

use dsh_llm_replay::{Ending, Entry, Item, ItemKind, Matcher, ReplayScript};

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

/// Turns a recorded session log into a script named `name`.
pub fn script_from_log(name: &str, events: &[Arc<SessionEvent>]) -> ReplayScript {
    let mut entries = Vec::new();
    let mut prompt = None;
    // Entries of the current turn whose finish depends on how the turn ends.
    let mut pending_final: Option<usize> = None;
    let mut step_has_message = false;
    for event in events {
        let record = match Record::decode(event) {
            Ok(record) => record,
            Err(err) => {
                tracing::warn!("left out of the script: {err}");
                continue;
            }
        };
        match record {
            Record::TurnStart(_) => {
                pending_final = None;
                step_has_message = false;
            }
            Record::StepStart(_) => step_has_message = false,
            Record::UserMessage(user) => {
                if prompt.is_none() {
                    prompt = Some(user.message.text);
                }
            }
            Record::AssistantMessage(recorded) => {
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
                let mut entry = entry(stream, Ending::Finish(finish));
                entry.usage = recorded.usage;
                entries.push(entry);
                pending_final = (!has_calls).then_some(entries.len() - 1);
            }
            // The summary was a model call of its own: the replay must answer it too.
            Record::Compacted(compacted) => {
                let stream = vec![item(ItemKind::Text(vec![compacted.summary]))];
                entries.push(entry(stream, Ending::Finish(FinishReason::Stop)));
            }
            Record::TurnEnd(end) => {
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
                    // A compaction with nothing to compact asked the model nothing.
                    TurnEndReason::Error { failure }
                        if !step_has_message
                            && failure.code != dsh_session::failure_code::COMPACTION =>
                    {
                        let kind: ModelErrorKind =
                            serde_json::from_value(serde_json::Value::String(failure.code.clone()))
                                .unwrap_or(ModelErrorKind::Server);
                        let mut error = ModelError::new(kind, failure.message);
                        error.status = failure.status;
                        entries.push(entry(Vec::new(), Ending::Error(error)));
                    }
                    TurnEndReason::Completed
                    | TurnEndReason::MaxSteps
                    | TurnEndReason::RepeatedCall { .. }
                    | TurnEndReason::Aborted { .. }
                    | TurnEndReason::Error { .. }
                    | TurnEndReason::Interrupted
                    | TurnEndReason::Unknown => {}
                }
                pending_final = None;
            }
            Record::StepEnd(_)
            | Record::AssistantChunk(_)
            | Record::ToolCall(_)
            | Record::ToolResult(_)
            | Record::Instructions(_)
            | Record::Title(_)
            | Record::ConfigChanged(_)
            | Record::Plan(_)
            | Record::PermissionRule(_)
            | Record::Subagent(_)
            | Record::HookRan(_)
            | Record::Other => {}
        }
    }
    ReplayScript {
        name: name.to_owned(),
        prompt,
        entries,
    }
}
