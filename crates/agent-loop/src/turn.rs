//! One turn: `turn/start`, its steps, `turn/end`. Every `turn/start` gets exactly one
//! `turn/end` and every `step/start` one `step/end`, on every path; the only exception is a
//! session that refuses appends because it was detached, which gets nothing more.

use std::sync::atomic::Ordering;
use std::time::Instant;

use dsh_agent::record::{CompactTrigger, UserMessageRecord};
use dsh_agent::{Failure, MessageSource, TicketSender, TurnEndReason, UserMessage};
use dsh_kernel::CancellationToken;
use dsh_session::{StepMark, TitleRecord, TitleSource, TurnEnd, TurnStart, title_of};
use tracing::Instrument;

use crate::agent::LoopAgent;
use crate::compact;
use crate::context::{Settled, settle};
use crate::inbox::{Pending, Work};
use crate::step::{StepEnd, run_step};
use crate::trace::elapsed_ms;
use crate::writer::Writer;

/// How a turn went, for its tickets.
pub(crate) struct TurnRecord {
    pub(crate) reason: TurnEndReason,
    /// False when not even `turn/start` could be written.
    pub(crate) recorded: bool,
}

/// Runs turn `number` whose first step claimed `claim`. The tickets of every message the
/// turn claims go into `tickets`, which outlives the turn so that even a turn that fails
/// inside the loop resolves them.
pub(crate) async fn run_turn(
    agent: &LoopAgent,
    number: u32,
    token: CancellationToken,
    claim: Vec<Pending>,
    tickets: &mut Vec<TicketSender>,
) -> TurnRecord {
    let kinds = &agent.shared.kinds;
    let mut writer = Writer::new(agent);
    // Before `turn/start`, so a log reads in the order the model saw things. A cancel here
    // reaches the first step through the token; a failure ends that step.
    let mut unsettled = match settle(&mut writer, &token).await {
        Settled::Ready | Settled::Cancelled => None,
        Settled::Failed(failure) => Some(failure),
    };
    if writer
        .append(&kinds.turn_start, &TurnStart { turn: number })
        .is_none()
    {
        tickets.extend(claim.into_iter().map(|p| p.ticket));
        return TurnRecord {
            reason: writer.session_end(),
            recorded: false,
        };
    }
    let mut claim = claim;
    let mut step = 0u32;
    // The session's hooks as they are now; those of project files trusted since it started
    // have their `SessionStart` run first, and what they add rides with the first step.
    let started = crate::hooks::refresh(agent, None, &token).await;
    let seam = crate::hooks::Seam::of(agent);
    // What a `Stop` hook keeps the turn going with (at first, what the late `SessionStart`
    // added), and how often it did in a row.
    let (mut kept_going, mut stop_blocks): (Option<UserMessage>, u32) = (started, 0);
    let reason = loop {
        step += 1;
        let mark = StepMark { turn: number, step };
        // The person's prompts of this step, and what `UserPromptSubmit` hooks add to them:
        // asked before the step opens, so its events go in with no wait between them.
        let mut added = Vec::new();
        if let Some(seam) = &seam {
            for pending in &claim {
                if let Work::Say(message) = &pending.work
                    && matches!(message.source, MessageSource::User)
                    && let Some(notice) = seam.prompt_submitted(&message.text, &token).await
                {
                    added.push(notice);
                }
            }
        }
        // The step's opening events go in with no cancellation point between them.
        writer.append(&kinds.step_start, &mark);
        let mut said_by_hooks = false;
        for message in kept_going.take().into_iter().chain(added) {
            let record = UserMessageRecord {
                turn: number,
                step,
                message,
            };
            writer.append(&kinds.user_message, &record);
            said_by_hooks = true;
        }
        // A compaction the user asked for runs before the step's model call; the step goes on
        // to the model only when messages came with it (a steer while it was queued).
        let (mut asked_to_compact, mut said) = (None, said_by_hooks);
        for pending in claim.drain(..) {
            match pending.work {
                Work::Say(message) => {
                    // The first prompt a person gave names the session.
                    let title = (matches!(message.source, MessageSource::User)
                        && !agent.titled.load(Ordering::Acquire))
                    .then(|| title_of(&message.text))
                    .flatten();
                    let record = UserMessageRecord {
                        turn: number,
                        step,
                        message,
                    };
                    writer.append(&kinds.user_message, &record);
                    if let Some(title) = title {
                        let title = TitleRecord {
                            title,
                            source: TitleSource::Prompt,
                        };
                        if writer.append(&kinds.title, &title).is_some() {
                            agent.titled.store(true, Ordering::Release);
                        }
                    }
                    said = true;
                }
                Work::Compact(id) => asked_to_compact = Some(id),
            }
            tickets.push(pending.ticket);
        }
        let end = if writer.dead || writer.refused.is_some() {
            StepEnd::End(writer.session_end())
        } else if let Some(failure) = unsettled.take() {
            StepEnd::End(TurnEndReason::Error { failure })
        } else {
            let span = tracing::debug_span!("step", step);
            let started = Instant::now();
            let compacted = match asked_to_compact.take() {
                Some(id) => compact_on_request(&mut writer, &mark, &token, id, said).await,
                None => compact_if_due(&mut writer, &mark, &token).await,
            };
            let end = match compacted {
                Some(end) => end,
                None => {
                    run_step_recovering(&mut writer, number, step, &token)
                        .instrument(span.clone())
                        .await
                }
            };
            span.in_scope(|| match &end {
                StepEnd::End(reason) => tracing::debug!(
                    ends_turn = reason.kind(),
                    elapsed_ms = elapsed_ms(started),
                    "step ended"
                ),
                StepEnd::Continue { tools_ran } => {
                    tracing::debug!(tools_ran, elapsed_ms = elapsed_ms(started), "step ended")
                }
            });
            end
        };
        writer.append(&kinds.step_end, &mark);
        let end = match (end, &writer.refused) {
            (StepEnd::End(reason), _) => Some(reason),
            (StepEnd::Continue { .. }, Some(_)) => Some(writer.session_end()),
            (StepEnd::Continue { tools_ran }, None) => {
                next_step(agent, number, step, tools_ran, &mut claim)
            }
        };
        // `Stop` hooks may keep a completed turn going, a few times in a row at most.
        if let (Some(TurnEndReason::Completed), Some(seam)) = (&end, &seam)
            && stop_blocks < crate::hooks::MAX_STOP_BLOCKS
            && step < agent.options.max_steps.get()
            && !token.is_cancelled()
            && let Some(message) = seam.stopping(stop_blocks > 0, &token).await
        {
            stop_blocks += 1;
            kept_going = Some(message);
            continue;
        }
        if let Some(reason) = end {
            break reason;
        }
    };
    // The agent now waits for the person, unless the person just stopped it.
    if let Some(seam) = &seam
        && !token.is_cancelled()
        && !matches!(
            reason,
            TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted
        )
    {
        let message = "dsh is waiting for your input".to_owned();
        seam.notify(crate::hooks::IDLE, message, &token).await;
    }
    // From its `turn/end` on the turn is no longer open: a cancel seen by an observer of that
    // event has nothing of this turn left to stop.
    {
        let mut state = agent.state.lock();
        if state.turn.as_ref().is_some_and(|t| t.number == number) {
            state.turn = None;
        }
    }
    writer.append(
        &kinds.turn_end,
        &TurnEnd {
            turn: number,
            reason: reason.clone(),
        },
    );
    TurnRecord {
        reason,
        recorded: true,
    }
}

/// The stop decision and the next step's claim, as one step under the agent's lock: a
/// message arriving concurrently lands in this turn's next step or in the next turn, never
/// in neither and never in both. `None` means another step runs with `claim`.
fn next_step(
    agent: &LoopAgent,
    number: u32,
    step: u32,
    tools_ran: bool,
    claim: &mut Vec<Pending>,
) -> Option<TurnEndReason> {
    let mut state = agent.state.lock();
    if let Some(cause) = state
        .turn
        .as_ref()
        .filter(|t| t.number == number)
        .and_then(|t| t.cause)
    {
        return Some(TurnEndReason::Aborted { cause });
    }
    let owed = tools_ran || state.inbox.has_steering();
    if !owed {
        return Some(TurnEndReason::Completed);
    }
    if step >= agent.options.max_steps.get() {
        return Some(TurnEndReason::MaxSteps);
    }
    *claim = state.inbox.claim_boundary();
    None
}

/// Compacts the history first when the last call's context reached the agent's threshold;
/// `Some` when that ended the step (a cancel). A failed compaction is logged and the step
/// goes on with the whole history: the server may still take it.
async fn compact_if_due(
    writer: &mut Writer<'_>,
    mark: &StepMark,
    token: &CancellationToken,
) -> Option<StepEnd> {
    let agent = writer.agent;
    if !compact::due(agent) {
        return None;
    }
    let outcome = compact::compact(writer, mark, token, CompactTrigger::Auto, None).await;
    compact::note_automatic(agent, &outcome);
    match outcome {
        compact::Outcome::Compacted => None,
        compact::Outcome::Cancelled => Some(StepEnd::End(agent.aborted(mark.turn))),
        compact::Outcome::Failed(failure) => {
            tracing::warn!(agent = %agent.id, "no compaction: {}", failure.message);
            None
        }
    }
}

/// The compaction the user asked for. It ends the step unless messages came with the
/// request (`said`): those still get their answer, from the compacted history. A compaction
/// that cannot be made ends the turn with the reason, since the user asked for it.
async fn compact_on_request(
    writer: &mut Writer<'_>,
    mark: &StepMark,
    token: &CancellationToken,
    id: dsh_agent::MessageId,
    said: bool,
) -> Option<StepEnd> {
    let agent = writer.agent;
    match compact::compact(writer, mark, token, CompactTrigger::Manual, Some(id)).await {
        compact::Outcome::Compacted if said => None,
        compact::Outcome::Compacted => Some(StepEnd::End(TurnEndReason::Completed)),
        compact::Outcome::Cancelled => Some(StepEnd::End(agent.aborted(mark.turn))),
        compact::Outcome::Failed(failure) => Some(StepEnd::End(TurnEndReason::Error { failure })),
    }
}

/// Runs the step; when the server refused its request as longer than the context, compacts
/// and runs it once more. If the compaction cannot be had either, the turn ends with an error
/// that says what to do.
async fn run_step_recovering(
    writer: &mut Writer<'_>,
    turn: u32,
    step: u32,
    token: &CancellationToken,
) -> StepEnd {
    let end = run_step(writer, turn, step, token).await;
    let StepEnd::End(TurnEndReason::Error { failure }) = &end else {
        return end;
    };
    if failure.code != overflow() {
        return end;
    }
    let refused = failure.message.clone();
    let agent = writer.agent;
    tracing::info!(agent = %agent.id, "the request overflowed the context; compacting");
    let mark = StepMark { turn, step };
    match compact::compact(writer, &mark, token, CompactTrigger::Overflow, None).await {
        compact::Outcome::Compacted => run_step(writer, turn, step, token).await,
        compact::Outcome::Cancelled => StepEnd::End(agent.aborted(turn)),
        compact::Outcome::Failed(why) => StepEnd::End(TurnEndReason::Error {
            failure: Failure::new(
                overflow(),
                format!(
                    "the conversation no longer fits the model's context ({refused}), and compacting it failed ({}). Start a new session (`dsh run` without --session), or raise context_window if the model takes more.",
                    why.message
                ),
            ),
        }),
    }
}

/// The failure code of a request longer than the context.
fn overflow() -> &'static str {
    dsh_llm::ModelErrorKind::ContextOverflow.code()
}
