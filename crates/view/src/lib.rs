//! Seam role: definition (layer 4) — the turn view: the vocabulary of what a person sees of
//! a session ([`Shown`]: text and reasoning as they stream, tool cards opened, progressing
//! and closed, the plan, compactions, usage and cost, turn ends) and the [`Projector`] that
//! turns a session's log records, with the tools' own presentations, into those events.
//!
//! Every front end (`dsh run`'s text and `--json`, `dsh acp`, the interactive terminal)
//! consumes view events and maps them to its medium; none rebuilds a turn from the log, and
//! none names a tool: how a call looks is the tool's to say ([`dsh_tools::ToolCallView`],
//! [`dsh_tools::ToolResultView`]).
//!
//! # Invariants
//!
//! - Live and replay are one projection: the same records give the same events, whether
//!   pushed one by one as they are appended or all at once from a stored log, and however
//!   the model's stream was cut into chunks.
//! - Every card is opened once, before anything about it, and closed once: at its result,
//!   at its turn's end, or when the view is closed.
//! - Text in an event is safe to show ([`dsh_tools::safe_text`]) unless its field says it is
//!   raw (a tool's output, the arguments as the model sent them): a front end passes raw
//!   text through its own medium's filter.
//! - Every event names its session, so a child agent's events fit beside its parent's.
//! - A presenter that panics costs its card's looks, not the view.
#![deny(missing_docs)]

mod calls;
mod card;
mod event;
mod family;
mod line;
mod present;
mod project;
mod tally;

pub use card::{Card, CardEnd, Closed, Look};
pub use event::{Answer, Compaction, Shown, Subagent, ViewEvent};
pub use family::Family;
pub use line::{child_line, hook_line};
pub use project::Projector;
pub use tally::Tally;

/// The id of the one plan a session has, for a front end whose medium names plans (ACP's
/// `plan_update`). It has been this since plans were first shown; clients keep it.
pub const PLAN_ID: &str = "todo";

#[cfg(test)]
mod tests;
