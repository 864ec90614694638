//! One step: the pre-request barrier, the model request built from the log, the streamed
//! answer, and the tool phase.

use std::time::Instant;

use dsh_agent::TurnEndReason;
use dsh_agent::record::{
    AssistantChunkRecord, AssistantMessageRecord, AssistantReply, Chunk, ContextUsage,
    ModelProgressRecord,
};
use dsh_kernel::{CancellationToken, contain};
use dsh_llm::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelParams, ModelRequest, ModelStream,
    ToolCall, ToolSpec, Usage,
};
use dsh_session::{Failure, failure_code};
use dsh_tools::ToolSet;
use futures::StreamExt;
use tracing::Instrument;

use crate::agent::LoopAgent;
use crate::tools::{PhaseEnd, run_tools};
use crate::trace::elapsed_ms;
use crate::writer::Writer;

/// How a step ended.
pub(crate) enum StepEnd {
    /// The turn ends with this reason.
    End(TurnEndReason),
    /// The step is done; `tools_ran` says whether the response's tools ran.
    Continue { tools_ran: bool },
}

/// What streaming one response produced.
#[derive(Default)]
struct Answer {
    text: String,
    reasoning: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
}

enum Streamed {
    Finished,
    Cancelled,
    Failed(Failure),
}

pub(crate) async fn run_step(
    writer: &mut Writer<'_>,
    turn: u32,
    step: u32,
    token: &CancellationToken,
) -> StepEnd {
    let agent = writer.agent;
    if token.is_cancelled() {
        return StepEnd::End(agent.aborted(turn));
    }
    let barrier = tokio::select! {
        biased;
        _ = token.cancelled() => None,
        flushed = agent.store.flush(&agent.id) => Some(flushed),
    };
    match barrier {
        None => return StepEnd::End(agent.aborted(turn)),
        Some(Err(err)) => {
            return StepEnd::End(TurnEndReason::Error {
                failure: Failure::new(
                    failure_code::PERSISTENCE,
                    format!("the pre-request barrier failed: {err}"),
                ),
            });
        }
        Some(Ok(())) => {}
    }
    if token.is_cancelled() {
        return StepEnd::End(agent.aborted(turn));
    }
    // Looked up per step through the agent's own scope, so a provider reload takes effect at
    // the next step and an unload reaches a running turn as a cancel, not a missing service.
    let model = match agent.scope.require::<dyn Model>() {
        Ok(model) => model,
        Err(err) => return StepEnd::End(unavailable("model", &err)),
    };
    let tools: ToolSet = match agent.tool_registry() {
        Ok(registry) => registry.snapshot(),
        Err(err) => return StepEnd::End(unavailable("tool registry", &err)),
    };
    let request = build_request(agent, &tools);
    let sent = crate::usage::request_bytes(&request);
    let mut answer = Answer::default();
    // The session's choice of model, when it made one, is what answered.
    let model_name = request
        .params
        .model
        .clone()
        .unwrap_or_else(|| model.info().model.clone());
    let span =
        tracing::debug_span!("model_call", model = %model_name, messages = request.messages.len());
    let started = Instant::now();
    let streamed = stream_answer(
        writer,
        turn,
        step,
        token,
        model.as_ref(),
        request,
        &mut answer,
    )
    .instrument(span.clone())
    .await;
    span.in_scope(|| {
        let outcome = match &streamed {
            Streamed::Finished => "finished",
            Streamed::Cancelled => "cancelled",
            Streamed::Failed(_) => "failed",
        };
        tracing::debug!(
            outcome,
            tool_calls = answer.calls.len(),
            input_tokens = answer.usage.as_ref().map(|u| u.input_tokens),
            output_tokens = answer.usage.as_ref().map(|u| u.output_tokens),
            elapsed_ms = elapsed_ms(started),
            "model call ended"
        );
    });
    let kinds = &agent.shared.kinds;
    match streamed {
        Streamed::Cancelled => {
            write_interrupted(writer, turn, step, &answer, &model_name);
            StepEnd::End(agent.aborted(turn))
        }
        Streamed::Failed(failure) => {
            write_interrupted(writer, turn, step, &answer, &model_name);
            StepEnd::End(TurnEndReason::Error { failure })
        }
        Streamed::Finished => {
            let finish = answer.finish.clone().unwrap_or(FinishReason::Stop);
            let ends = match &finish {
                FinishReason::Length => Some(TurnEndReason::MaxTokens),
                FinishReason::ContentFilter => Some(TurnEndReason::Refusal),
                FinishReason::Other(other) => {
                    tracing::warn!(agent = %agent.id, "the model finished for an unknown reason {other:?}");
                    None
                }
                FinishReason::Stop | FinishReason::ToolCalls => None,
            };
            let calls = if ends.is_some() {
                Vec::new()
            } else {
                std::mem::take(&mut answer.calls)
            };
            let received = (answer.text.len()
                + answer.reasoning.len()
                + crate::usage::calls_bytes(&answer.calls)
                + crate::usage::calls_bytes(&calls)) as u64;
            let context = crate::usage::context_usage(
                answer.usage.as_ref(),
                sent,
                received,
                agent.options.context_window.get(),
            );
            let record = AssistantMessageRecord {
                turn,
                step,
                message: answer.reply(calls.clone()),
                model: model_name,
                finish: Some(finish),
                usage: answer.usage.take(),
                context: Some(context),
                interrupted: false,
            };
            writer.append(&kinds.assistant, &record);
            if let Some(reason) = ends {
                return StepEnd::End(reason);
            }
            if calls.is_empty() {
                return StepEnd::Continue { tools_ran: false };
            }
            match run_tools(writer, turn, step, token, &tools, calls).await {
                PhaseEnd::Done => StepEnd::Continue { tools_ran: true },
                PhaseEnd::Cancelled => StepEnd::End(agent.aborted(turn)),
                PhaseEnd::BarrierFailed(failure) => StepEnd::End(TurnEndReason::Error { failure }),
                PhaseEnd::Repeated(tool) => StepEnd::End(TurnEndReason::RepeatedCall { tool }),
            }
        }
    }
}

fn unavailable(what: &str, err: &dsh_kernel::KernelError) -> TurnEndReason {
    TurnEndReason::Error {
        failure: Failure::new(
            failure_code::SERVICE_UNAVAILABLE,
            format!("no {what} is available: {err}"),
        ),
    }
}

impl Answer {
    /// What was streamed, as the step's reply with `tool_calls`.
    fn reply(&self, tool_calls: Vec<ToolCall>) -> AssistantReply {
        AssistantReply {
            content: self.text.clone(),
            reasoning: (!self.reasoning.is_empty()).then(|| self.reasoning.clone()),
            tool_calls,
            ..AssistantReply::default()
        }
    }
}

/// The least a pruning must free, in tokens: smaller gains are not worth a changed prefix.
const PRUNE_AT_LEAST: u64 = 20_000;

fn build_request(agent: &LoopAgent, tools: &ToolSet) -> ModelRequest {
    let (model, reasoning) = agent.request_params();
    let mut messages = Vec::new();
    if let Some(Some(system)) = agent.system.get() {
        messages.push(Message::System {
            content: system.to_string(),
        });
    }
    {
        // Only what was appended since the last step is read: a step's cost does not grow
        // with the log it extends.
        let mut history = agent.history.lock();
        let appended = agent.session.events_from(history.next_seq());
        history.extend(&appended);
        let keep = agent.options.keep_tool_output;
        if keep > 0 {
            let bytes = |tokens: u64| (tokens * ContextUsage::BYTES_PER_TOKEN) as usize;
            history.prune(bytes(keep), bytes(PRUNE_AT_LEAST));
        }
        messages.extend(history.messages());
    }
    ModelRequest {
        messages,
        tools: tools
            .schemas()
            .into_iter()
            .map(|s| ToolSpec {
                name: s.name,
                description: s.description,
                parameters: s.parameters,
            })
            .collect(),
        params: ModelParams {
            max_tokens: agent.options.max_output_tokens.map(|n| n.get()),
            temperature: agent.options.temperature,
            reasoning,
            model,
        },
        session_id: Some(agent.id.as_str().to_owned()),
    }
}

async fn stream_answer(
    writer: &mut Writer<'_>,
    turn: u32,
    step: u32,
    token: &CancellationToken,
    model: &dyn Model,
    request: ModelRequest,
    answer: &mut Answer,
) -> Streamed {
    let started = contain::catch_future(model.stream(request, token.clone()));
    let opened = tokio::select! {
        biased;
        _ = token.cancelled() => return Streamed::Cancelled,
        opened = started => opened,
    };
    let mut stream: ModelStream = match opened {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => return model_failure(writer, turn, &err),
        Err(panic) => return panicked(&panic),
    };
    #[cfg(debug_assertions)]
    let mut checker = dsh_llm::StreamChecker::new();
    let kinds = &writer.agent.shared.kinds;
    let mut calls = CallsProgress::new(turn, step);
    loop {
        // Raced against the token: a provider that ignores its token cannot hold the turn
        // open; dropping the stream closes its connection.
        let next = tokio::select! {
            biased;
            _ = token.cancelled() => return Streamed::Cancelled,
            next = contain::catch_future(stream.next()) => next,
        };
        let item = match next {
            Ok(Some(item)) => item,
            Ok(None) => {
                return Streamed::Failed(Failure::new(
                    failure_code::PROTOCOL,
                    "the model's stream ended without a finish",
                ));
            }
            Err(panic) => return panicked(&panic),
        };
        #[cfg(debug_assertions)]
        if let Err(violation) = checker.observe(&item) {
            return Streamed::Failed(Failure::new(failure_code::PROTOCOL, violation.to_string()));
        }
        match item {
            Err(err) => return model_failure(writer, turn, &err),
            Ok(event) => match event {
                ModelEvent::ReasoningDelta(piece) => {
                    answer.reasoning.push_str(&piece);
                    let chunk = Chunk::ReasoningDelta(piece);
                    writer.append(&kinds.chunk, &AssistantChunkRecord { turn, step, chunk });
                }
                ModelEvent::TextDelta(piece) => {
                    answer.text.push_str(&piece);
                    let chunk = Chunk::TextDelta(piece);
                    writer.append(&kinds.chunk, &AssistantChunkRecord { turn, step, chunk });
                }
                ModelEvent::ToolCallEnd {
                    id,
                    name,
                    arguments,
                    ..
                } => answer.calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                }),
                ModelEvent::Usage(usage) => answer.usage = Some(usage),
                ModelEvent::Finish { reason } => {
                    answer.finish = Some(reason);
                    return Streamed::Finished;
                }
                ModelEvent::ToolCallStart { name, .. } => {
                    calls.started(name);
                    calls.tell(writer, true);
                }
                ModelEvent::ToolCallArgumentsDelta { fragment, .. } => {
                    calls.grew(fragment.len());
                    calls.tell(writer, false);
                }
            },
        }
    }
}

fn model_failure(writer: &Writer<'_>, turn: u32, err: &ModelError) -> Streamed {
    if err.kind == dsh_llm::ModelErrorKind::Cancelled && writer.agent.cancel_cause(turn).is_some() {
        return Streamed::Cancelled;
    }
    Streamed::Failed(Failure {
        code: err.kind.code().to_owned(),
        message: err.message.clone(),
        status: err.status,
        request_id: err.request_id.clone(),
    })
}

fn panicked(message: &str) -> Streamed {
    tracing::error!("the model provider panicked: {message}");
    Streamed::Failed(Failure::new(
        failure_code::INTERNAL,
        format!("the model provider panicked: {message}"),
    ))
}

/// Keeps what the user already saw: streamed text or reasoning becomes an interrupted message
/// (never with tool calls), so the next request still shows it.
fn write_interrupted(writer: &mut Writer<'_>, turn: u32, step: u32, answer: &Answer, model: &str) {
    if answer.text.trim().is_empty() && answer.reasoning.trim().is_empty() {
        return;
    }
    let record = AssistantMessageRecord {
        turn,
        step,
        message: answer.reply(Vec::new()),
        model: model.to_owned(),
        finish: None,
        usage: None,
        context: None,
        interrupted: true,
    };
    let kinds = &writer.agent.shared.kinds;
    writer.append(&kinds.assistant, &record);
}

/// The tool calls of an answer as they stream in, told to the session's watchers as
/// `model/progress`: at each call begun, and every [`CallsProgress::EVERY`] bytes of arguments
/// between, so a long call (a file's whole content) shows it grows.
struct CallsProgress {
    record: ModelProgressRecord,
    /// Argument bytes when the last notice went.
    told_at: u64,
}

impl CallsProgress {
    const EVERY: u64 = 4096;

    fn new(turn: u32, step: u32) -> CallsProgress {
        CallsProgress {
            record: ModelProgressRecord {
                turn,
                step,
                tool_calls: 0,
                argument_bytes: 0,
                tool: String::new(),
            },
            told_at: 0,
        }
    }

    fn started(&mut self, tool: String) {
        self.record.tool_calls += 1;
        self.record.tool = tool;
    }

    fn grew(&mut self, bytes: usize) {
        self.record.argument_bytes += bytes as u64;
    }

    /// Publishes the progress when a call began (`now`) or enough bytes came since.
    fn tell(&mut self, writer: &Writer<'_>, now: bool) {
        if !now && self.record.argument_bytes < self.told_at + Self::EVERY {
            return;
        }
        self.told_at = self.record.argument_bytes;
        let agent = writer.agent;
        if let Err(err) = agent
            .session
            .notify(&agent.shared.kinds.model_progress, &self.record)
        {
            tracing::debug!(agent = %agent.id, "model progress not shown: {err}");
        }
    }
}
