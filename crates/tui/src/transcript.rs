//! View events as the terminal's transcript: finished lines, which go to the terminal's own
//! scrollback and never change, and the live part, redrawn in the viewport until it is
//! finished (the answer's unfinished line, running calls with the last lines of their
//! output).
//!
//! A call is one line while it runs (its title) and is written to the scrollback when it
//! ends, with its status and what the tool shows of its result, since the scrollback cannot
//! change afterwards.

use std::collections::VecDeque;
use std::sync::Arc;

use dsh_session::TurnEndReason;
use dsh_tools::safe_text::SafeText;
use dsh_tools::{PlanStatus, ToolKindHint, ToolResultView};
use dsh_view::{Card, CardEnd, Closed, Shown};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

use crate::markdown::Markdown;

/// How many lines of a running command's output the viewport shows.
const LIVE_TAIL: usize = 5;
/// How many lines of a finished command's output go to the scrollback (its last ones).
const KEPT_OUTPUT: usize = 12;
/// How many changed lines of a diff go to the scrollback.
const KEPT_DIFF: usize = 40;

/// The most characters of an unfinished line the viewport shows: a model that writes a
/// megabyte without a line break must not make each frame lay it all out.
const LIVE_CHARS: usize = 2000;

/// What the transcript says of a turn that did not simply complete, and in what colour.
fn ending(reason: &TurnEndReason) -> Option<(String, Color)> {
    let said = match reason {
        TurnEndReason::Completed => return None,
        TurnEndReason::MaxTokens => "[stopped at the output token limit]".to_owned(),
        TurnEndReason::MaxSteps => "[stopped at the step limit]".to_owned(),
        TurnEndReason::RepeatedCall { tool } => format!(
            "[stopped: the model kept repeating the same {} call]",
            SafeText::plain(tool)
        ),
        TurnEndReason::Refusal => "[the model refused]".to_owned(),
        TurnEndReason::Aborted { .. } => "[cancelled]".to_owned(),
        TurnEndReason::Interrupted => "[interrupted]".to_owned(),
        TurnEndReason::Unknown => "[ended]".to_owned(),
        TurnEndReason::Error { failure } => {
            let said = format!(
                "error: {} ({})",
                SafeText::plain(&failure.message),
                SafeText::plain(&failure.code)
            );
            return Some((said, Color::Red));
        }
    };
    Some((said, Color::Yellow))
}

/// `line` cut to `width` characters, an ellipsis marking the cut.
fn cut(line: &str, width: usize) -> String {
    match line.chars().count() > width {
        true => {
            line.chars()
                .take(width.saturating_sub(1))
                .collect::<String>()
                + "…"
        }
        false => line.to_owned(),
    }
}

/// The end of an unfinished line, as much as the viewport shows.
fn tail(line: &str) -> String {
    let count = line.chars().count();
    match count > LIVE_CHARS {
        true => line.chars().skip(count - LIVE_CHARS).collect(),
        false => line.to_owned(),
    }
}

/// The transcript of one session as a terminal shows it.
pub struct Transcript {
    palette: Palette,
    markdown: Markdown,
    /// The answer's unfinished line, and the reasoning's (safe text).
    text: String,
    reasoning: String,
    /// Calls running, in the order they began.
    running: Vec<Running>,
    /// Lines finished since they were last taken.
    finished: Vec<Line<'static>>,
}

/// A call that is running.
struct Running {
    card: Arc<Card>,
    /// The last lines of its output, and the one being written.
    tail: VecDeque<String>,
    partial: String,
    filter: SafeText,
}

/// Colours, or none (`NO_COLOR`): styles keep their weight either way.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    /// Whether colours are shown (`NO_COLOR` turns them off).
    pub color: bool,
}

impl Palette {
    pub(crate) fn fg(self, color: Color) -> Style {
        match self.color {
            true => Style::new().fg(color),
            false => Style::new(),
        }
    }

    pub(crate) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
}

impl Transcript {
    /// An empty transcript.
    pub fn new(palette: Palette) -> Transcript {
        Transcript {
            palette,
            markdown: Markdown::default(),
            text: String::new(),
            reasoning: String::new(),
            running: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// The lines finished since the last call, oldest first.
    pub fn take_finished(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.finished)
    }

    /// What is still changing: the reasoning's and the answer's unfinished lines, and each
    /// running call with the last lines of its output, each cut to `width` columns (a
    /// command's lines are a glance at its progress: wrapped, they would crowd the screen).
    pub fn live(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if !self.reasoning.is_empty() {
            lines.push(Line::styled(tail(&self.reasoning), self.palette.dim()));
        }
        if !self.text.is_empty() {
            lines.push(Line::raw(tail(&self.text)));
        }
        for running in &self.running {
            lines.push(Line::from(vec![
                Span::styled("▸ ".to_owned(), self.palette.fg(Color::Cyan)),
                Span::raw(running.card.title.clone()),
            ]));
            let partial = (!running.partial.is_empty()).then_some(&running.partial);
            for line in running.tail.iter().chain(partial) {
                let line = cut(&format!("  {line}"), usize::from(width));
                lines.push(Line::styled(line, self.palette.dim()));
            }
        }
        lines
    }

    /// Takes one view event.
    pub fn show(&mut self, shown: Shown) {
        match shown {
            Shown::Prompt { text, .. } => {
                self.end_streams();
                self.finished.extend(prompt_lines(&text));
            }
            Shown::Reasoning(piece) => {
                self.reasoning.push_str(&piece);
                while let Some(at) = self.reasoning.find('\n') {
                    let line: String = self.reasoning.drain(..=at).collect();
                    let line = line.trim_end_matches('\n').to_owned();
                    self.finished.push(Line::styled(line, self.palette.dim()));
                }
            }
            Shown::Text(piece) => {
                self.end_reasoning();
                self.text.push_str(&piece);
                while let Some(at) = self.text.find('\n') {
                    let line: String = self.text.drain(..=at).collect();
                    let line = self.markdown.line(line.trim_end_matches('\n'));
                    self.finished.push(line);
                }
            }
            Shown::Answered(_) => self.end_streams(),
            Shown::CallOpened(card) => {
                self.end_streams();
                if card.kind != ToolKindHint::Plan {
                    self.running.push(Running {
                        card,
                        tail: VecDeque::new(),
                        partial: String::new(),
                        filter: SafeText::new(false),
                    });
                }
            }
            Shown::CallOutput { card, output, .. } => {
                if let Some(running) = self.running.iter_mut().find(|r| r.card.id == card) {
                    running.take(&output);
                }
            }
            Shown::CallClosed(closed) => {
                self.running.retain(|r| r.card.id != closed.card.id);
                self.closed(closed);
            }
            Shown::Plan { entries, .. } => {
                self.end_streams();
                for entry in entries {
                    let (mark, style) = match entry.status {
                        PlanStatus::Pending => ("☐", Style::new()),
                        PlanStatus::InProgress => ("◐", Style::new().add_modifier(Modifier::BOLD)),
                        PlanStatus::Completed => ("☑", self.palette.dim()),
                    };
                    self.finished
                        .push(Line::styled(format!("{mark} {}", entry.content), style));
                }
            }
            Shown::Compacted(compaction) => {
                self.end_streams();
                let line = format!(
                    "— context compacted: the model continues from a summary of {} tokens —",
                    compaction.tokens_before
                );
                self.finished.push(Line::styled(line, self.palette.dim()));
            }
            Shown::Warnings(warnings) => {
                for warning in warnings {
                    let line = format!("warning: {warning}");
                    self.finished
                        .push(Line::styled(line, self.palette.fg(Color::Yellow)));
                }
            }
            Shown::TurnEnded { reason, .. } => {
                self.end_streams();
                if let Some((line, colour)) = ending(&reason) {
                    self.finished
                        .push(Line::styled(line, self.palette.fg(colour)));
                }
            }
            Shown::HookRan(ran) => {
                let line = dsh_view::hook_line(&ran);
                self.finished.push(Line::styled(line, self.palette.dim()));
            }
            Shown::TurnStarted { .. }
            | Shown::StepStarted { .. }
            | Shown::Title(_)
            | Shown::ModelProgress(_)
            | Shown::Subagent(_)
            | Shown::Compacting(_) => {}
        }
    }

    fn end_reasoning(&mut self) {
        if !self.reasoning.is_empty() {
            let line = std::mem::take(&mut self.reasoning);
            self.finished.push(Line::styled(line, self.palette.dim()));
        }
    }

    /// Finishes the unfinished lines: the model stopped writing them.
    fn end_streams(&mut self) {
        self.end_reasoning();
        if !self.text.is_empty() {
            let line = std::mem::take(&mut self.text);
            let line = self.markdown.line(&line);
            self.finished.push(line);
        }
    }

    /// A call that ended, as the scrollback keeps it: its status and title, then what the
    /// tool shows of its result.
    fn closed(&mut self, closed: Closed) {
        let card = closed.card;
        // A command that exited badly ran, but did not succeed: it is marked as failed.
        let ok = match &closed.end {
            CardEnd::Completed {
                shown: ToolResultView::Terminal { exit, .. },
                ..
            } => {
                exit.exit_code.is_none_or(|code| code == 0)
                    && !exit.timed_out
                    && exit.signal.is_none()
            }
            end => !end.failed(),
        };
        if card.kind == ToolKindHint::Plan && ok {
            // The plan it recorded follows, whole.
            return;
        }
        let (mark, style) = match ok {
            true => ("✓ ", self.palette.fg(Color::Green)),
            false => ("✗ ", self.palette.fg(Color::Red)),
        };
        self.finished.push(Line::from(vec![
            Span::styled(mark.to_owned(), style),
            Span::raw(card.title.clone()),
        ]));
        match closed.end {
            CardEnd::Completed { shown, .. } => self.result(shown),
            CardEnd::Failed { content, shown, .. } => {
                if let Some(ToolResultView::Terminal { output, .. }) = shown {
                    self.output(&output);
                }
                let message = SafeText::plain(content.trim_end());
                for line in message
                    .lines()
                    .rev()
                    .take(3)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                {
                    self.finished.push(Line::styled(
                        format!("  {line}"),
                        self.palette.fg(Color::Red),
                    ));
                }
            }
            CardEnd::Abandoned => self
                .finished
                .push(Line::styled("  interrupted".to_owned(), self.palette.dim())),
        }
    }

    fn result(&mut self, shown: ToolResultView) {
        match shown {
            ToolResultView::Terminal { output, exit } => {
                self.output(&output);
                let ending = match (exit.exit_code, &exit.signal) {
                    _ if exit.timed_out => Some("timed out".to_owned()),
                    (Some(0), _) => None,
                    (Some(code), _) => Some(format!("exit {code}")),
                    (None, Some(signal)) => Some(format!("killed by {signal}")),
                    (None, None) => None,
                };
                for line in exit.note.iter().chain(ending.as_ref()) {
                    let line = format!("  {}", SafeText::plain(line));
                    self.finished
                        .push(Line::styled(line, self.palette.fg(Color::Yellow)));
                }
            }
            ToolResultView::Diff {
                summary,
                old_text,
                new_text,
                first_line,
                ..
            } => {
                let summary = format!("  {}", SafeText::plain(&summary));
                self.finished
                    .push(Line::styled(summary, self.palette.dim()));
                self.diff(&old_text, &new_text, first_line as usize);
            }
            ToolResultView::Generic {
                summary: Some(summary),
                ..
            } => {
                let summary = format!("  {}", SafeText::plain(&summary));
                self.finished
                    .push(Line::styled(summary, self.palette.dim()));
            }
            // A generic call's result (an MCP server's) is for the model; its card says
            // that it ran.
            ToolResultView::Generic { summary: None, .. } => {}
        }
    }

    /// The last lines of a finished command's output.
    fn output(&mut self, output: &str) {
        let output = SafeText::plain(output);
        let lines: Vec<&str> = output.lines().collect();
        let skipped = lines.len().saturating_sub(KEPT_OUTPUT);
        if skipped > 0 {
            let line = format!("  … {skipped} earlier lines");
            self.finished.push(Line::styled(line, self.palette.dim()));
        }
        for line in &lines[skipped..] {
            self.finished
                .push(Line::styled(format!("  {line}"), self.palette.dim()));
        }
    }

    fn diff(&mut self, old: &str, new: &str, first: usize) {
        let lines = diff_lines(self.palette, old, new, first);
        self.finished.extend(lines);
    }
}

/// A prompt as the transcript shows it (safe text): bold, marked `›`.
pub(crate) fn prompt_lines(text: &str) -> Vec<Line<'static>> {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let mark = if i == 0 { "› " } else { "  " };
            Line::styled(format!("{mark}{line}"), bold)
        })
        .collect()
}

/// A change's lines, numbered, removed red and added green (at most [`KEPT_DIFF`]).
pub(crate) fn diff_lines(
    palette: Palette,
    old: &str,
    new: &str,
    first: usize,
) -> Vec<Line<'static>> {
    let diff = TextDiff::from_lines(old, new);
    let mut lines = Vec::new();
    let mut hidden = 0;
    for change in diff.iter_all_changes() {
        let (sign, style, index) = match change.tag() {
            ChangeTag::Delete => ('-', palette.fg(Color::Red), change.old_index()),
            ChangeTag::Insert => ('+', palette.fg(Color::Green), change.new_index()),
            ChangeTag::Equal => continue,
        };
        if lines.len() == KEPT_DIFF {
            hidden += 1;
            continue;
        }
        let number = index.map_or(String::new(), |i| (first + i).to_string());
        let text = SafeText::plain(change.value().trim_end_matches(['\n', '\r']));
        lines.push(Line::styled(format!("{number:>6} {sign} {text}"), style));
    }
    if hidden > 0 {
        let line = format!("       … {hidden} more changed lines");
        lines.push(Line::styled(line, palette.dim()));
    }
    lines
}

impl Running {
    /// A piece of the call's output: made safe, a lone carriage return going back to the
    /// line's start (a progress counter shows its last state).
    fn take(&mut self, piece: &str) {
        let piece = piece.replace("\r\n", "\n");
        let mut segments = piece.split('\n').peekable();
        while let Some(segment) = segments.next() {
            match segment.rsplit_once('\r') {
                Some((_, last)) => self.partial = self.filter.push(last.as_bytes()),
                None => self.partial.push_str(&self.filter.push(segment.as_bytes())),
            }
            if segments.peek().is_some() {
                self.tail.push_back(std::mem::take(&mut self.partial));
                if self.tail.len() > LIVE_TAIL {
                    self.tail.pop_front();
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
