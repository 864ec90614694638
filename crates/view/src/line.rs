//! One line for what a child agent does: how a front end shows a subagent's work under the
//! card that started it (`dsh run`, the interactive terminal, and an editor that shows no
//! child sessions), the same words everywhere.

use dsh_session::TurnEndReason;
use dsh_tools::ToolKindHint;

use crate::card::{CardEnd, Look};
use crate::event::Shown;

/// The line for `shown`, safe; `None` for what a child's line does not show (its streaming
/// text, which its answer gives whole, its model calls, its plan's cards).
pub fn child_line(shown: &Shown) -> Option<String> {
    match shown {
        Shown::CallOpened(card) if card.kind == ToolKindHint::Plan => None,
        Shown::CallOpened(card) => Some(match &card.look {
            Look::Terminal { command, .. } => format!("$ {}", first_line(command)),
            Look::Generic {
                summary: Some(what),
                ..
            } => format!("▸ {} {}", card.name, first_line(what)),
            Look::Generic { summary: None, .. } => format!("▸ {}", first_line(&card.title)),
        }),
        Shown::CallClosed(closed) => match &closed.end {
            CardEnd::Failed { content, code, .. } => {
                let why = match code.as_deref() {
                    Some("cancelled") => "cancelled".to_owned(),
                    Some(_) | None => first_line(&dsh_tools::safe_text::SafeText::plain(content)),
                };
                Some(format!("✗ {}: {why}", closed.card.name))
            }
            CardEnd::Completed { .. } | CardEnd::Abandoned => None,
        },
        Shown::Plan { entries, .. } => {
            let done = entries
                .iter()
                .filter(|e| e.status == dsh_agent::record::PlanStatus::Completed)
                .count();
            Some(format!("plan: {done} of {} done", entries.len()))
        }
        Shown::TurnEnded { reason, .. } => Some(ended(reason).to_owned()),
        Shown::TurnStarted { .. }
        | Shown::StepStarted { .. }
        | Shown::Prompt { .. }
        | Shown::Title(_)
        | Shown::Text(_)
        | Shown::Reasoning(_)
        | Shown::Answered(_)
        | Shown::CallOutput { .. }
        | Shown::Compacting(_)
        | Shown::Compacted(_)
        | Shown::ModelProgress(_)
        | Shown::Warnings(_)
        | Shown::Subagent(_)
        | Shown::HookRan(_) => None,
    }
}

/// The line of one of the user's hook runs: `hook PreToolUse · guard.sh · blocked · 12 ms`.
/// A failed run says why: `hook Stop · make check · failed · 40 ms: the hook `make check`
/// exited 2: …`.
pub fn hook_line(ran: &dsh_agent::record::HookRanRecord) -> String {
    let mut line = format!(
        "hook {} · {} · {} · {} ms",
        ran.event,
        first_line(&ran.command),
        ran.decision,
        ran.elapsed_ms
    );
    if let Some(error) = &ran.error {
        line.push_str(": ");
        line.push_str(&first_line(error));
    }
    line
}

/// How a child's turn ended, in a word or two.
fn ended(reason: &TurnEndReason) -> &'static str {
    match reason {
        TurnEndReason::Completed => "done",
        TurnEndReason::Aborted { .. } => "cancelled",
        TurnEndReason::MaxSteps => "stopped at its step limit",
        TurnEndReason::MaxTokens => "stopped at its output limit",
        TurnEndReason::RepeatedCall { .. } => "stopped repeating a call",
        TurnEndReason::Refusal => "refused",
        TurnEndReason::Error { .. } => "failed",
        TurnEndReason::Interrupted => "interrupted",
        TurnEndReason::Unknown => "ended",
    }
}

/// The first line of `text`, cut to a width a line beside a title leaves.
fn first_line(text: &str) -> String {
    const MOST: usize = 100;
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}
