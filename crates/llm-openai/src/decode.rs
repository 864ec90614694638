//! Chunk decoding: one whole server-sent event (or a complete JSON answer) in, `ModelEvent`s
//! out. The output is the same for every split of the same bytes, because the splitter
//! reassembles events and this decoder only sees whole ones.

use std::collections::HashMap;

use dsh_llm::{FinishReason, ModelError, ModelErrorKind, ModelEvent, Usage};
use serde_json::Value;

use crate::sse::SseEvent;

/// The largest single SSE event accepted.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

pub(crate) fn protocol(message: impl Into<String>) -> ModelError {
    ModelError::new(ModelErrorKind::Protocol, message)
}

/// A tool call being reassembled.
struct Call {
    id: Option<String>,
    name: Option<String>,
    args: String,
    /// Dense output index, assigned at `ToolCallStart`.
    started: Option<u32>,
}

/// The decoder's state across events.
#[derive(Default)]
pub(crate) struct Decoder {
    calls: Vec<Call>,
    /// Open call per provider key (the fragment's `index`, or its array position).
    open: HashMap<u64, usize>,
    next_index: u32,
    finish: Option<String>,
    usage: Option<Usage>,
    any_item: bool,
}

/// What one event means.
pub(crate) enum Step {
    Events(Vec<ModelEvent>),
    /// The stream is complete: final events (ends, usage, finish) or the terminal error.
    Done(Vec<ModelEvent>, Option<ModelError>),
}

fn typed<'a>(value: &'a Value, path: &str, want: &str) -> Result<Option<&'a Value>, ModelError> {
    let ok = match want {
        "string" => value.is_string(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        _ => true,
    };
    if value.is_null() {
        Ok(None)
    } else if ok {
        Ok(Some(value))
    } else {
        Err(protocol(format!(
            "field `{path}` should be a {want}, found {value}"
        )))
    }
}

fn field<'a>(
    obj: &'a Value,
    key: &str,
    path: &str,
    want: &str,
) -> Result<Option<&'a Value>, ModelError> {
    match obj.get(key) {
        None => Ok(None),
        Some(v) => typed(v, &format!("{path}.{key}"), want),
    }
}

fn string<'a>(obj: &'a Value, key: &str, path: &str) -> Result<Option<&'a str>, ModelError> {
    Ok(field(obj, key, path, "string")?.and_then(Value::as_str))
}

/// Maps an error object (in a chunk, an `event: error` or a JSON body) to a model error.
pub(crate) fn error_from(obj: &Value) -> ModelError {
    let code = obj
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| obj.get("type").and_then(Value::as_str))
        .unwrap_or("");
    let kind = if code.starts_with("rate_limit") {
        ModelErrorKind::RateLimited
    } else if code == "insufficient_quota" {
        ModelErrorKind::InsufficientBalance
    } else if code.starts_with("invalid_request") {
        ModelErrorKind::BadRequest
    } else {
        ModelErrorKind::Server
    };
    let message = obj
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the server reported an error")
        .to_owned();
    ModelError::new(kind, message)
}

fn random_id() -> String {
    let mut id = String::from("call_");
    id.extend((0..24).map(|_| fastrand::alphanumeric()));
    id
}

impl Decoder {
    /// Handles one SSE event.
    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Step, ModelError> {
        if event.data.len() > MAX_EVENT_BYTES {
            return Err(protocol(format!(
                "an event of {} bytes exceeds the 16 MiB limit",
                event.data.len()
            )));
        }
        let data = event.data.trim();
        match event.event.as_str() {
            "" | "message" | "error" => {}
            _ => return Ok(Step::Events(Vec::new())),
        }
        if data.is_empty() {
            return Ok(Step::Events(Vec::new()));
        }
        if event.event != "error" && data == "[DONE]" {
            return self.complete(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            let excerpt: String = data.chars().take(200).collect();
            protocol(format!("invalid JSON in the event stream ({e}): {excerpt}"))
        })?;
        if !chunk.is_object() {
            return Err(protocol(format!(
                "an event is not a JSON object: {}",
                data.chars().take(200).collect::<String>()
            )));
        }
        if event.event == "error" {
            let obj = chunk.get("error").unwrap_or(&chunk);
            return Err(error_from(obj));
        }
        self.chunk(&chunk)
    }

    /// Handles one chunk object (or a complete answer rewritten as one chunk).
    pub(crate) fn chunk(&mut self, chunk: &Value) -> Result<Step, ModelError> {
        if let Some(err) = chunk.get("error").filter(|e| e.is_object()) {
            return Err(error_from(err));
        }
        // TGI: `{"error": "<text>", "error_type": …}`; vLLM: `{"object": "error", "message": …}`.
        if let Some(text) = chunk.get("error").and_then(Value::as_str) {
            let code = chunk
                .get("error_type")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(error_from(
                &serde_json::json!({ "message": text, "type": code }),
            ));
        }
        if chunk.get("object").and_then(Value::as_str) == Some("error") {
            return Err(error_from(chunk));
        }
        if let Some(usage) = field(chunk, "usage", "", "object")? {
            self.usage = Some(usage_from(usage)?);
        }
        let mut out = Vec::new();
        let Some(choices) = field(chunk, "choices", "", "array")? else {
            return Ok(Step::Events(out));
        };
        let Some(choice) = choices.as_array().and_then(|c| c.first()) else {
            return Ok(Step::Events(out));
        };
        if let Some(delta) = field(choice, "delta", "choices[0]", "object")? {
            let path = "choices[0].delta";
            let reasoning = match string(delta, "reasoning_content", path)? {
                Some(r) => Some(r),
                None => string(delta, "reasoning", path)?,
            };
            if let Some(r) = reasoning.filter(|r| !r.is_empty()) {
                out.push(ModelEvent::ReasoningDelta(r.to_owned()));
            }
            if let Some(t) = string(delta, "content", path)?.filter(|t| !t.is_empty()) {
                out.push(ModelEvent::TextDelta(t.to_owned()));
            }
            if let Some(calls) = field(delta, "tool_calls", path, "array")? {
                for (position, fragment) in calls.as_array().into_iter().flatten().enumerate() {
                    self.fragment(position, fragment, &mut out)?;
                }
            }
        }
        if let Some(reason) = string(choice, "finish_reason", "choices[0]")? {
            self.finish = Some(reason.to_owned());
        }
        self.any_item |= !out.is_empty();
        Ok(Step::Events(out))
    }

    fn fragment(
        &mut self,
        position: usize,
        fragment: &Value,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let path = format!("choices[0].delta.tool_calls[{position}]");
        let key = match field(fragment, "index", &path, "number")? {
            Some(i) => i
                .as_u64()
                .ok_or_else(|| protocol(format!("field `{path}.index` is not an index")))?,
            None => position as u64,
        };
        let id = string(fragment, "id", &path)?.filter(|s| !s.is_empty());
        let function = field(fragment, "function", &path, "object")?;
        let fpath = format!("{path}.function");
        let name = match function {
            Some(f) => string(f, "name", &fpath)?.filter(|s| !s.is_empty()),
            None => None,
        };
        let args = match function {
            Some(f) => string(f, "arguments", &fpath)?.unwrap_or(""),
            None => "",
        };
        // The first id wins: servers send a call's id after its name, or change it between
        // deltas. Only a delta that brings both a name and an id other than the open call's
        // starts a new call at a reused index.
        let reopen = match self.open.get(&key) {
            None => true,
            Some(&i) => {
                name.is_some()
                    && matches!((id, &self.calls[i].id), (Some(new), Some(old)) if new != old)
            }
        };
        if reopen {
            self.calls.push(Call {
                id: None,
                name: None,
                args: String::new(),
                started: None,
            });
            self.open.insert(key, self.calls.len() - 1);
        }
        let index = self.open[&key];
        let call = &mut self.calls[index];
        if call.id.is_none() {
            call.id = id.map(str::to_owned);
        }
        if call.name.is_none() {
            call.name = name.map(str::to_owned);
        }
        call.args.push_str(args);
        match (call.started, &call.name) {
            (None, Some(name)) => {
                let out_index = self.next_index;
                self.next_index += 1;
                call.started = Some(out_index);
                let id = call.id.get_or_insert_with(random_id).clone();
                out.push(ModelEvent::ToolCallStart {
                    index: out_index,
                    id,
                    name: name.clone(),
                });
                if !call.args.is_empty() {
                    out.push(ModelEvent::ToolCallArgumentsDelta {
                        index: out_index,
                        fragment: call.args.clone(),
                    });
                }
            }
            (Some(out_index), _) if !args.is_empty() => {
                out.push(ModelEvent::ToolCallArgumentsDelta {
                    index: out_index,
                    fragment: args.to_owned(),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends the stream: `[DONE]` (`done`) or a clean end of body.
    pub(crate) fn complete(&mut self, done: bool) -> Result<Step, ModelError> {
        let Some(reason) = self.finish.clone().or_else(|| done.then(String::new)) else {
            return Err(ModelError::new(
                ModelErrorKind::Transport,
                "connection closed before the response completed",
            ));
        };
        if reason.is_empty() && !self.any_item && self.calls.is_empty() {
            return Err(protocol("empty response"));
        }
        let mut out = Vec::new();
        let mut started: Vec<&Call> = self.calls.iter().filter(|c| c.started.is_some()).collect();
        if self.calls.iter().any(|c| c.started.is_none()) {
            return Err(protocol("a streamed tool call never received a name"));
        }
        started.sort_by_key(|c| c.started);
        for call in &started {
            out.push(ModelEvent::ToolCallEnd {
                index: call.started.unwrap_or(0),
                id: call.id.clone().unwrap_or_default(),
                name: call.name.clone().unwrap_or_default(),
                arguments: call.args.clone(),
            });
        }
        let streamed_call = !started.is_empty();
        let finish = match reason.as_str() {
            "" | "stop" if streamed_call => FinishReason::ToolCalls,
            "" | "stop" => FinishReason::Stop,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "length" => FinishReason::Length,
            "content_filter" => FinishReason::ContentFilter,
            "insufficient_system_resource" => {
                return Ok(Step::Done(
                    out,
                    Some(ModelError::new(
                        ModelErrorKind::Server,
                        "server ran out of resources mid-response",
                    )),
                ));
            }
            // OpenRouter ends a failed generation with `error`, SGLang an aborted one with
            // `abort`: failures, never a completed turn.
            "error" | "abort" => {
                return Ok(Step::Done(
                    out,
                    Some(ModelError::new(
                        ModelErrorKind::Server,
                        format!("the server ended the response with finish_reason \"{reason}\""),
                    )),
                ));
            }
            other => FinishReason::Other(other.to_owned()),
        };
        if let Some(usage) = self.usage.take() {
            out.push(ModelEvent::Usage(usage));
        }
        out.push(ModelEvent::Finish { reason: finish });
        Ok(Step::Done(out, None))
    }
}

fn usage_from(usage: &Value) -> Result<Usage, ModelError> {
    let num = |key: &str| -> Result<Option<u64>, ModelError> {
        Ok(field(usage, key, "usage", "number")?.and_then(Value::as_u64))
    };
    let details = |outer: &str, inner: &str| -> Option<u64> {
        usage
            .get(outer)
            .and_then(|d| d.get(inner))
            .and_then(Value::as_u64)
    };
    Ok(Usage {
        input_tokens: num("prompt_tokens")?.unwrap_or(0),
        output_tokens: num("completion_tokens")?.unwrap_or(0),
        total_tokens: num("total_tokens")?,
        cache_hit_tokens: num("prompt_cache_hit_tokens")?
            .or_else(|| details("prompt_tokens_details", "cached_tokens")),
        cache_miss_tokens: num("prompt_cache_miss_tokens")?,
        reasoning_tokens: details("completion_tokens_details", "reasoning_tokens"),
    })
}
