//! View events as `--json` lines: what the model said and did, as data.

use dsh_tools::ToolResultView;
use dsh_view::{CardEnd, Shown};

use crate::json_lines::Line;

/// The lines of one view event, given to `emit` in order.
pub fn lines(shown: &Shown, mut emit: impl FnMut(Line<'_>)) {
    match shown {
        Shown::TurnStarted { turn } => emit(Line::TurnStart { turn: *turn }),
        // The renderer says it, with what only it knows.
        Shown::Subagent(_) => {}
        // The log keeps every hook run (`dsh sessions show --json`); the lines carry what the
        // hooks decided, in the results and messages they changed.
        Shown::HookRan(_) => {}
        Shown::Reasoning(text) => emit(Line::Reasoning { text }),
        Shown::Text(text) => emit(Line::Text { text }),
        Shown::Answered(answer) => {
            // One line a finished call: its usage, or that the server gave none.
            if answer.usage.is_some() || answer.context.is_some() {
                let usage = answer.usage.as_ref().filter(|u| u.input_tokens > 0);
                emit(Line::Usage {
                    step: answer.step,
                    input_tokens: usage.map(|u| u.input_tokens),
                    output_tokens: usage.map(|u| u.output_tokens),
                    cache_hit_tokens: usage.and_then(|u| u.cache_hit_tokens),
                    cache_miss_tokens: usage.and_then(|u| u.cache_miss_tokens),
                    reasoning_tokens: usage.and_then(|u| u.reasoning_tokens),
                    context_used: answer.context.map(|c| c.used),
                    context_window: answer.context.map(|c| c.window),
                    estimated: answer.context.is_some_and(|c| c.estimated),
                });
            }
            emit(Line::Message {
                step: answer.step,
                text: &answer.text(),
            });
        }
        Shown::CallOpened(card) => emit(Line::ToolCall {
            call_id: &card.call.call_id,
            name: &card.name,
            arguments: &card.call.arguments,
            title: &card.title,
        }),
        Shown::CallOutput {
            card: _,
            call_id,
            output,
        } => emit(Line::ToolOutput { call_id, output }),
        Shown::CallClosed(closed) => {
            let card = &closed.card;
            let (is_error, output, error_code, shown) = match &closed.end {
                CardEnd::Completed { content, shown } => (false, content, None, Some(shown)),
                CardEnd::Failed {
                    content,
                    code,
                    shown,
                } => (true, content, code.as_deref(), shown.as_ref()),
                // It never returned: the turn's end says why.
                CardEnd::Abandoned => return,
            };
            let exit_code = match shown {
                Some(ToolResultView::Terminal { exit, .. }) if !is_error => Some(exit.exit_code),
                Some(
                    ToolResultView::Terminal { .. }
                    | ToolResultView::Generic { .. }
                    | ToolResultView::Diff { .. },
                )
                | None => None,
            };
            emit(Line::ToolResult {
                call_id: &card.call.call_id,
                name: &card.name,
                is_error,
                output,
                error_code,
                exit_code,
            });
        }
        Shown::Plan {
            turn: _,
            step,
            entries,
        } => emit(Line::Plan {
            step: *step,
            entries,
        }),
        Shown::Compacted(compaction) => emit(Line::Compacted {
            trigger: compaction.trigger,
            tokens_before: compaction.tokens_before,
            tokens_after: compaction.tokens_after,
            input_tokens: compaction.usage.as_ref().map(|u| u.input_tokens),
            output_tokens: compaction.usage.as_ref().map(|u| u.output_tokens),
            summary: &compaction.summary,
            files_read: &compaction.files_read,
            files_modified: &compaction.files_modified,
        }),
        Shown::ModelProgress(progress) => emit(Line::Progress {
            step: progress.step,
            tool_calls: progress.tool_calls,
            argument_bytes: progress.argument_bytes,
            tool: &progress.tool,
        }),
        // The run's own last line says how the turn ended; warnings go to stderr.
        Shown::TurnEnded { .. }
        | Shown::StepStarted { .. }
        | Shown::Prompt { .. }
        | Shown::Title(_)
        | Shown::Compacting(_)
        | Shown::Warnings(_) => {}
    }
}
