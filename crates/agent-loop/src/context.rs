//! The system message of an agent: settled once per agent life, before its first turn.
//!
//! Model-visible means logged: the text sent is the text of the last `context/instructions`
//! record in the log. A fresh agent asks the context service for a record and writes it; a
//! resumed one asks too, and sends the recorded text unchanged while the recorded record is
//! [`still_current`](dsh_agent::record::InstructionsRecord::still_current) — the prompt
//! prefix, and the provider's cache of it, survive a resume — or writes the fresh one.

use std::sync::Arc;

use dsh_agent::record::InstructionsRecord;
use dsh_agent::{CallerPrompt, ContextBuilder, ContextRequest, ToolBrief};
use dsh_kernel::{CancellationToken, contain};
use dsh_llm::Model;
use dsh_session::{Failure, failure_code};

use crate::writer::Writer;

/// How settling went.
pub(crate) enum Settled {
    /// The text is settled (possibly to none: no context service and no caller prompt).
    Ready,
    /// The turn was cancelled while the context was built; nothing was settled.
    Cancelled,
    /// The context could not be built; the turn fails with this, and the next turn tries
    /// again.
    Failed(Failure),
}

/// Settles the agent's system text unless it is already, writing a record when the log's
/// last one is missing or outdated.
pub(crate) async fn settle(writer: &mut Writer<'_>, token: &CancellationToken) -> Settled {
    let agent = writer.agent;
    if agent.system.get().is_some() {
        return Settled::Ready;
    }
    let recorded = {
        let mut history = agent.history.lock();
        let appended = agent.session.events_from(history.next_seq());
        history.extend(&appended);
        history.instructions().cloned()
    };
    // A caller prompt given once (an editor's, at `session/new`) outlives a reload that does
    // not resend it.
    let caller = agent
        .options
        .system_prompt
        .clone()
        .or_else(|| recorded.as_ref().and_then(|r| r.caller.clone()));
    let fresh = match agent.scope.get::<dyn ContextBuilder>() {
        Some(builder) => {
            let mut request = ContextRequest::new(&agent.session.header().cwd);
            request.model = agent
                .scope
                .get::<dyn Model>()
                .map(|model| model.info().model.clone())
                .unwrap_or_default();
            request.tools = tool_briefs(agent);
            request.audience = agent.options.audience;
            request.caller = caller;
            let built = tokio::select! {
                biased;
                _ = token.cancelled() => return Settled::Cancelled,
                built = contain::catch_future(builder.build(request)) => built,
            };
            match built {
                Ok(Ok(record)) => record,
                Ok(Err(err)) => {
                    return Settled::Failed(Failure::new(failure_code::CONTEXT, err.to_string()));
                }
                Err(panic) => {
                    tracing::error!(agent = %agent.id, "the context service panicked: {panic}");
                    return Settled::Failed(Failure::new(
                        failure_code::INTERNAL,
                        format!("the context service panicked: {panic}"),
                    ));
                }
            }
        }
        None => match caller {
            Some(caller) => caller_only(caller),
            None => {
                let _ = agent.system.set(None);
                return Settled::Ready;
            }
        },
    };
    let text: Arc<str> = match recorded {
        Some(recorded) if recorded.still_current(&fresh) => recorded.text.into(),
        Some(_) | None => {
            let text = fresh.text.clone().into();
            writer.append(&agent.shared.kinds.instructions, &fresh);
            text
        }
    };
    // Only the driver settles, one turn at a time, so nothing else can have set it.
    let _ = agent.system.set(Some(text));
    Settled::Ready
}

/// The registered tools with their guidance, in the registry's order.
fn tool_briefs(agent: &crate::agent::LoopAgent) -> Vec<ToolBrief> {
    let Ok(registry) = agent.tool_registry() else {
        return Vec::new();
    };
    let tools = registry.snapshot();
    tools
        .names()
        .into_iter()
        .map(|name| ToolBrief {
            name: name.to_owned(),
            guidance: tools.get(name).and_then(|tool| tool.guidance()),
        })
        .collect()
}

/// The record of a system message that is the caller's text alone (no context service).
fn caller_only(caller: CallerPrompt) -> InstructionsRecord {
    InstructionsRecord {
        text: caller.text.clone(),
        caller: Some(caller),
        ..InstructionsRecord::default()
    }
}
