//! Compaction: when a step's context reached the configured share of the window, the next
//! step first asks the model (the same model, no tools) for a handoff summary and records it
//! as `context/compacted`; the model's history then starts again from the summary and the
//! most recent user messages. The log keeps everything.
//!
//! The files the summary lists come from the tool calls themselves, not from the model's
//! memory: a call whose tool says it reads (or edits) and that names a `path` counts.

use dsh_agent::Failure;
use dsh_agent::record::{
    CompactTrigger, CompactedRecord, CompactingRecord, CompactingState, ContextUsage,
};
use dsh_kernel::{CancellationToken, contain};
use dsh_llm::{Message, Model, ModelEvent, ModelParams, ModelRequest, Usage};
use dsh_session::{StepMark, failure_code};
use dsh_tools::{Effect, Roots, ToolSet};
use futures::StreamExt;
use serde_json::Value;

use crate::agent::LoopAgent;
use crate::history::Since;
use crate::writer::Writer;

/// What the model is asked, before the list of files.
const PROMPT: &str = include_str!("../prompts/compact.md");

/// How much of the most recent user messages is kept word for word.
const KEEP_BYTES: usize = 16 * 1024;

/// How a compaction ended.
pub(crate) enum Outcome {
    /// Recorded: the history starts again from the summary.
    Compacted,
    /// The turn was cancelled meanwhile.
    Cancelled,
    /// The summary could not be had; the history is unchanged.
    Failed(Failure),
}

/// Whether the context after the last model call reached the agent's threshold. After an
/// automatic compaction failed, only once the context grew a twentieth of the window past
/// where it failed: a server that cannot summarise is not asked again at every step.
pub(crate) fn due(agent: &LoopAgent) -> bool {
    let at = f64::from(agent.options.compact_at);
    if at <= 0.0 {
        return false;
    }
    let mut history = agent.history.lock();
    let appended = agent.session.events_from(history.next_seq());
    history.extend(&appended);
    let Some(context) = history.since().context else {
        return false;
    };
    let retry_from = agent
        .compaction_failed_at
        .lock()
        .map_or(0, |failed| failed + context.window / 20);
    context.used as f64 >= at * context.window as f64 && context.used >= retry_from
}

/// Remembers how an automatic compaction went, for [`due`].
pub(crate) fn note_automatic(agent: &LoopAgent, outcome: &Outcome) {
    let failed_at = match outcome {
        Outcome::Failed(_) => agent.history.lock().since().context.map(|c| c.used),
        Outcome::Compacted | Outcome::Cancelled => None,
    };
    *agent.compaction_failed_at.lock() = failed_at;
}

/// Compacts the history: asks for the summary and records it. The session's observers are
/// told when it starts and, unless it is recorded, how it ended (`context/compacting`).
pub(crate) async fn compact(
    writer: &mut Writer<'_>,
    mark: &StepMark,
    token: &CancellationToken,
    trigger: CompactTrigger,
    request: Option<dsh_agent::MessageId>,
) -> Outcome {
    let agent = writer.agent;
    let (history, since, through_seq) = {
        let mut projection = agent.history.lock();
        let appended = agent.session.events_from(projection.next_seq());
        projection.extend(&appended);
        (
            projection.messages(),
            projection.since().clone(),
            projection.last_seq().unwrap_or(0),
        )
    };
    if since.read == 0 {
        return failed(match history.is_empty() {
            true => "there is nothing to compact yet".to_owned(),
            false => "there is nothing new to compact: the session has had no conversation since its last compaction".to_owned(),
        });
    }
    let tell = |state: CompactingState| {
        let note = CompactingRecord {
            turn: mark.turn,
            step: mark.step,
            through_seq,
            request: request.clone(),
            trigger,
            state,
        };
        if let Err(err) = agent.session.notify(&agent.shared.kinds.compacting, &note) {
            tracing::debug!(agent = %agent.id, "compaction not shown: {err}");
        }
    };
    tell(CompactingState::Started);
    // The user's hooks: `PreCompact` may ask the summary to keep something, and
    // `SessionStart` (`compact`) speaks to the model that goes on from the summary.
    let seam = crate::hooks::Seam::of(agent);
    let keep = match &seam {
        Some(seam) => {
            let trigger = match trigger {
                CompactTrigger::Manual => "manual",
                CompactTrigger::Auto | CompactTrigger::Overflow => "auto",
            };
            seam.compacting(trigger, token).await
        }
        None => Vec::new(),
    };
    let outcome = summarise_and_record(
        writer,
        mark,
        token,
        trigger,
        (history, since, through_seq),
        &keep,
    )
    .await;
    if let (Outcome::Compacted, Some(seam)) = (&outcome, &seam)
        && let Some(notice) = seam.session_started("compact", token).await
        && let Err(err) = dsh_agent::Agent::inject(agent, notice)
    {
        tracing::warn!(agent = %agent.id, "the start hooks after a compaction were not heard: {err}");
    }
    match &outcome {
        Outcome::Compacted => {}
        Outcome::Cancelled => tell(CompactingState::Cancelled),
        Outcome::Failed(failure) => tell(CompactingState::Failed {
            message: failure.message.clone(),
        }),
    }
    outcome
}

/// Asks for the summary of `history` (the projection as of `through_seq`) and records it.
async fn summarise_and_record(
    writer: &mut Writer<'_>,
    mark: &StepMark,
    token: &CancellationToken,
    trigger: CompactTrigger,
    (history, since, through_seq): (Vec<Message>, Since, u64),
    keep: &[String],
) -> Outcome {
    let agent = writer.agent;
    let model = match agent.scope.require::<dyn Model>() {
        Ok(model) => model,
        Err(err) => {
            return Outcome::Failed(Failure::new(
                failure_code::SERVICE_UNAVAILABLE,
                format!("no model to summarise with: {err}"),
            ));
        }
    };
    let tools = agent
        .tool_registry()
        .ok()
        .map(|registry| registry.snapshot());
    let (files_read, files_modified) = files(&since.calls, tools.as_ref(), &agent.roots());
    let mut messages = Vec::new();
    let system = agent.system.get().cloned().flatten();
    if let Some(system) = &system {
        messages.push(Message::System {
            content: system.to_string(),
        });
    }
    messages.extend(history);
    let mut ask = question(&files_read, &files_modified);
    // What the user's `PreCompact` hooks ask the summary to keep.
    for also in keep {
        ask.push_str("\n\nAlso keep this, which the user's tooling asks for: ");
        ask.push_str(also);
    }
    // Appended to a last user message rather than after it: some servers refuse two in a row.
    match messages.last_mut() {
        Some(Message::User { content }) => {
            content.push_str("\n\n");
            content.push_str(&ask);
        }
        Some(_) | None => messages.push(Message::User { content: ask }),
    }
    let (model_choice, reasoning) = agent.request_params();
    let request = ModelRequest {
        messages,
        tools: Vec::new(),
        params: ModelParams {
            max_tokens: None,
            temperature: None,
            reasoning,
            model: model_choice,
        },
        session_id: Some(agent.id.as_str().to_owned()),
    };
    let (summary, usage) = match summary_fitting(model.as_ref(), request, token).await {
        Ok(answer) => answer,
        Err(outcome) => return outcome,
    };
    let mut record = CompactedRecord {
        turn: mark.turn,
        step: mark.step,
        summary,
        through_seq,
        kept: kept(&since.users),
        files_read,
        files_modified,
        tokens_before: since.context.map_or(0, |c| c.used),
        tokens_after: 0,
        trigger,
        usage,
    };
    let left = system.as_ref().map_or(0, |s| s.len()) + record.opening().len();
    record.tokens_after = (left as u64).div_ceil(ContextUsage::BYTES_PER_TOKEN);
    let kinds = &agent.shared.kinds;
    match writer.append(&kinds.compacted, &record) {
        Some(_) => Outcome::Compacted,
        None => Outcome::Failed(Failure::new(
            failure_code::SESSION,
            "the compaction could not be recorded",
        )),
    }
}

fn failed(message: String) -> Outcome {
    Outcome::Failed(Failure::new(failure_code::COMPACTION, message))
}

/// Why no summary came back.
enum NoSummary {
    Cancelled,
    /// The summary request itself was too long for the context.
    Overflow(String),
    Failed(Failure),
}

/// The model's summary: the text of its answer, and the usage the server reported.
async fn summarise(
    model: &dyn Model,
    request: ModelRequest,
    token: &CancellationToken,
) -> Result<(String, Option<Usage>), NoSummary> {
    // The turn's cancel may land between the select's look at the token and the model's own
    // (on another thread): the model then reports the cancel, and it is one.
    let refused = |err: &dsh_llm::ModelError| match err.kind {
        _ if token.is_cancelled() => NoSummary::Cancelled,
        dsh_llm::ModelErrorKind::ContextOverflow => NoSummary::Overflow(err.to_string()),
        _ => NoSummary::Failed(Failure::new(
            err.kind.code(),
            format!("the summary request failed: {err}"),
        )),
    };
    let broken =
        |message: String| NoSummary::Failed(Failure::new(failure_code::COMPACTION, message));
    let started = contain::catch_future(model.stream(request, token.clone()));
    let opened = tokio::select! {
        biased;
        _ = token.cancelled() => return Err(NoSummary::Cancelled),
        opened = started => opened,
    };
    let mut stream = match opened {
        Ok(Ok(stream)) => stream,
        Ok(Err(err)) => return Err(refused(&err)),
        Err(panic) => return Err(broken(format!("the model provider panicked: {panic}"))),
    };
    let mut text = String::new();
    let mut usage = None;
    loop {
        let next = tokio::select! {
            biased;
            _ = token.cancelled() => return Err(NoSummary::Cancelled),
            next = contain::catch_future(stream.next()) => next,
        };
        match next {
            Ok(Some(Ok(ModelEvent::TextDelta(piece)))) => text.push_str(&piece),
            Ok(Some(Ok(ModelEvent::Usage(reported)))) => usage = Some(reported),
            Ok(Some(Ok(ModelEvent::Finish { .. }))) => break,
            Ok(Some(Ok(
                ModelEvent::ReasoningDelta(_)
                | ModelEvent::ToolCallStart { .. }
                | ModelEvent::ToolCallArgumentsDelta { .. }
                | ModelEvent::ToolCallEnd { .. },
            ))) => {}
            Ok(Some(Err(err))) => return Err(refused(&err)),
            Ok(None) => return Err(broken("the summary stream ended unfinished".to_owned())),
            Err(panic) => return Err(broken(format!("the model provider panicked: {panic}"))),
        }
    }
    if text.trim().is_empty() {
        return Err(broken("the model wrote an empty summary".to_owned()));
    }
    Ok((text, usage))
}

/// The summary, asking again with fewer tool outputs while the request is too long: each
/// time the middle half of the outputs still there is dropped (the first calls set the task
/// up and the last ones are where the work stands, so the middle is what matters least).
async fn summary_fitting(
    model: &dyn Model,
    mut request: ModelRequest,
    token: &CancellationToken,
) -> Result<(String, Option<Usage>), Outcome> {
    for _ in 0..MAX_DROPS {
        match summarise(model, request.clone(), token).await {
            Ok(summary) => return Ok(summary),
            Err(NoSummary::Cancelled) => return Err(Outcome::Cancelled),
            Err(NoSummary::Failed(failure)) => return Err(Outcome::Failed(failure)),
            Err(NoSummary::Overflow(message)) => {
                if !drop_middle_outputs(&mut request.messages) {
                    return Err(overflowed(message));
                }
            }
        }
    }
    Err(overflowed(
        "the summary request was still too long after dropping tool output".to_owned(),
    ))
}

/// How many times the summary is asked for again with less tool output.
const MAX_DROPS: usize = 4;

/// What a dropped tool output reads as.
pub(crate) const DROPPED: &str = "[dsh: this output was dropped to fit the context]";

/// Drops the middle half of the tool outputs still present; false when none is left.
fn drop_middle_outputs(messages: &mut [Message]) -> bool {
    let present: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Tool { content, .. } if content != DROPPED))
        .map(|(i, _)| i)
        .collect();
    if present.is_empty() {
        return false;
    }
    let n = present.len();
    let (from, to) = (n / 4, (n - n / 4).max(n / 4 + 1).min(n));
    for &i in &present[from..to] {
        if let Some(Message::Tool { content, .. }) = messages.get_mut(i) {
            *content = DROPPED.to_owned();
        }
    }
    true
}

fn overflowed(message: String) -> Outcome {
    Outcome::Failed(Failure::new(
        dsh_llm::ModelErrorKind::ContextOverflow.code(),
        message,
    ))
}

/// What the model is asked: the prompt, then the files the calls touched.
fn question(read: &[String], modified: &[String]) -> String {
    let list = |files: &[String]| match files.is_empty() {
        true => "(none)".to_owned(),
        false => files.join("\n"),
    };
    format!(
        "{}\nFiles read:\n{}\n\nFiles modified:\n{}",
        PROMPT.trim_end(),
        list(read),
        list(modified)
    )
}

/// The files the calls read and modified, each once, in the order first touched. A call
/// counts by what its tool says it does and the `path` it names.
fn files(
    calls: &[(String, String)],
    tools: Option<&ToolSet>,
    roots: &Roots,
) -> (Vec<String>, Vec<String>) {
    let (mut read, mut modified) = (Vec::new(), Vec::new());
    for (name, arguments) in calls {
        let Some(tool) = tools.and_then(|t| t.get(name)) else {
            continue;
        };
        let Ok(args) = serde_json::from_str::<Value>(arguments) else {
            continue;
        };
        let Some(path) = args.get("path").and_then(Value::as_str) else {
            continue;
        };
        let list = match tool.effect(&args, roots) {
            Effect::Read | Effect::ReadOutside => &mut read,
            Effect::Edit | Effect::EditOutside => &mut modified,
            Effect::Execute | Effect::Confined | Effect::Escalate | Effect::Unconfined => continue,
        };
        if !list.iter().any(|p| p == path) {
            list.push(path.to_owned());
        }
    }
    (read, modified)
}

/// The most recent user messages that fit [`KEEP_BYTES`], oldest first; the last one always,
/// cut to the budget when it alone is larger.
fn kept(users: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut used = 0;
    for message in users.iter().rev() {
        if used + message.len() > KEEP_BYTES {
            if kept.is_empty() {
                let mut end = KEEP_BYTES;
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                kept.push(format!("{}\n[… cut]", &message[..end]));
            }
            break;
        }
        used += message.len();
        kept.push(message.clone());
    }
    kept.reverse();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recent_messages_are_kept_within_the_budget() {
        let small: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
        assert_eq!(kept(&small), small);
        let big = vec![
            "old".to_owned(),
            "x".repeat(KEEP_BYTES - 3),
            "new".to_owned(),
        ];
        assert_eq!(kept(&big), big[1..]);
        let huge = vec!["y".repeat(KEEP_BYTES + 10)];
        let cut = kept(&huge);
        assert_eq!(cut.len(), 1);
        assert!(cut[0].ends_with("[… cut]"));
    }

    #[test]
    fn the_middle_outputs_go_first_and_nothing_is_left_to_drop_at_the_end() {
        let tool = |i: usize| Message::Tool {
            call_id: format!("c{i}"),
            content: format!("out {i}"),
        };
        let mut messages: Vec<Message> = (0..8).map(tool).collect();
        assert!(drop_middle_outputs(&mut messages));
        let dropped: Vec<bool> = messages
            .iter()
            .map(|m| matches!(m, Message::Tool { content, .. } if content == DROPPED))
            .collect();
        assert_eq!(
            dropped,
            [false, false, true, true, true, true, false, false]
        );
        while drop_middle_outputs(&mut messages) {}
        assert!(
            messages
                .iter()
                .all(|m| matches!(m, Message::Tool { content, .. } if content == DROPPED))
        );
    }
}
