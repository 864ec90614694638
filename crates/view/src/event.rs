//! The vocabulary: one [`ViewEvent`] for each thing a person sees happen in a session.

use std::sync::Arc;

use dsh_agent::MessageSource;
use dsh_agent::record::{
    CompactTrigger, CompactingRecord, ContextUsage, HookRanRecord, ModelProgressRecord, PlanEntry,
};
use dsh_llm::Usage;
use dsh_session::{SessionId, TurnEndReason};
use dsh_tools::safe_text::SafeText;

use crate::card::{Card, Closed};

/// One thing shown, in the session it happened in.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewEvent {
    /// The session: a parent's or one of its child agents'.
    pub session: SessionId,
    /// What is shown.
    pub shown: Shown,
}

/// What a person sees happen.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    /// A turn began.
    TurnStarted {
        /// Its number in the session.
        turn: u32,
    },
    /// A model call began: until its first words, the session waits for the model.
    StepStarted {
        /// The turn.
        turn: u32,
        /// The step in it.
        step: u32,
    },
    /// A message of the conversation for the model (the user's prompt, a plugin's notice),
    /// shown once its step shows an answer or ends; one whose turn ended before that is not
    /// shown.
    Prompt {
        /// Safe text.
        text: String,
        /// Who sent it.
        source: MessageSource,
    },
    /// The session's title, from here on. Follows the prompt it came from.
    Title(String),
    /// A piece of the model's answer as it streams. Safe text.
    Text(String),
    /// A piece of the model's reasoning as it streams. Safe text.
    Reasoning(String),
    /// A model call finished.
    Answered(Answer),
    /// The model asked for a tool call (shared: the view keeps it until it closes).
    CallOpened(Arc<Card>),
    /// Output of a running call, as it arrives (live only; never stored).
    CallOutput {
        /// The card's id.
        card: String,
        /// The call's id as the model gave it (raw).
        call_id: String,
        /// Raw: the command's own bytes as text, escape sequences and all.
        output: String,
    },
    /// A call ended (or was given up at its turn's end).
    CallClosed(Closed),
    /// The plan, whole, each time the model changes it.
    Plan {
        /// The turn.
        turn: u32,
        /// The step whose call changed it.
        step: u32,
        /// The steps of the plan, in order; their text is safe.
        entries: Vec<PlanEntry>,
    },
    /// A compaction is under way, was cancelled or failed (live only).
    Compacting(CompactingRecord),
    /// The model's history now starts again from a summary.
    Compacted(Compaction),
    /// The model is streaming tool calls, which show nothing else (live only).
    ModelProgress(ModelProgressRecord),
    /// What building the system message warned about, and a window too small for it.
    /// Safe text.
    Warnings(Vec<String>),
    /// A child agent started by a call of a followed session: the event is in the child's
    /// name, and every later event in that name is the child's work, to show under the card.
    Subagent(Subagent),
    /// One of the user's hooks ran (its texts safe).
    HookRan(HookRanRecord),
    /// A turn ended; every card of it was closed before.
    TurnEnded {
        /// The turn.
        turn: u32,
        /// Why.
        reason: TurnEndReason,
        /// The last model call said something a person can read.
        answered: bool,
    },
}

/// A child agent, as its parent's front end shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Subagent {
    /// The session whose call started it.
    pub parent: SessionId,
    /// The card of that call in the parent's view, when it is open there.
    pub card: Option<String>,
    /// The call's id as the model gave it. Raw.
    pub call_id: String,
    /// The card's title (empty when the card is not open), safe.
    pub title: String,
    /// What the child does in a few words: the card's summary, else its title. Safe.
    pub label: String,
    /// 1 for a child of the followed session, 2 for a grandchild …
    pub depth: u32,
}

/// A finished model call.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The whole answer as the model sent it: read it through [`Answer::text`].
    raw_text: String,
    /// The whole reasoning likewise, through [`Answer::reasoning`]; empty when there was none.
    raw_reasoning: String,
    /// The answer arrived as [`Shown::Text`] and [`Shown::Reasoning`] pieces already; a
    /// front end that showed those shows the whole only when this is false.
    pub streamed: bool,
    /// What the server reported it used, when it did.
    pub usage: Option<Usage>,
    /// How full the model's context is after it. The session's totals after it are the
    /// projector's [`crate::Projector::tally`].
    pub context: Option<ContextUsage>,
}

impl Answer {
    /// An answer of `turn`'s `step` as the model sent it.
    pub(crate) fn new(
        (turn, step): (u32, u32),
        raw_text: String,
        raw_reasoning: String,
        streamed: bool,
        usage: Option<Usage>,
        context: Option<ContextUsage>,
    ) -> Answer {
        Answer {
            turn,
            step,
            raw_text,
            raw_reasoning,
            streamed,
            usage,
            context,
        }
    }

    /// The whole answer, safe. Filtered when asked for: most front ends showed the pieces
    /// as they streamed and never ask.
    pub fn text(&self) -> String {
        SafeText::plain(&self.raw_text)
    }

    /// The whole reasoning, safe; empty when there was none.
    pub fn reasoning(&self) -> String {
        SafeText::plain(&self.raw_reasoning)
    }
}

/// A compaction that was recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Compaction {
    /// Its id within the session (the last event the summary stands for).
    pub through_seq: u64,
    /// What started it.
    pub trigger: CompactTrigger,
    /// The context before it, in tokens (0 when not known).
    pub tokens_before: u64,
    /// What it left, estimated (0 when not known).
    pub tokens_after: u64,
    /// The summary the model continues from, safe.
    pub summary: String,
    /// Files the summarised conversation read.
    pub files_read: Vec<String>,
    /// Files it changed.
    pub files_modified: Vec<String>,
    /// What the summary request used.
    pub usage: Option<Usage>,
    /// The context after it, when the window is known.
    pub context: Option<ContextUsage>,
}
