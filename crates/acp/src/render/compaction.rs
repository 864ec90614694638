//! A compaction as the client sees it. A client that advertised `session.compaction` gets
//! `compaction_update`s: `in_progress` when the summary is asked for, then `completed` with
//! the summary (or `failed`, `cancelled`); one named by the seq the summary stands for, which
//! the live notice and the stored record share, so a replay names it as it was named live.
//! Any other client gets a line in the transcript where the model's history starts again.
//! Either way the context ring follows (from the turn view): the usage after a compaction
//! is what it left.

use agent_client_protocol_schema::v1::{
    CompactionStatus, CompactionUpdate, ContentBlock, SessionUpdate,
};
use dsh_agent::record::{CompactingRecord, CompactingState};
use dsh_tools::safe_text::SafeText;
use dsh_view::Compaction;

use super::RenderCaps;
use super::parts::message;

/// Where a compaction happened, as the transcript of a client without compaction updates
/// shows it.
const COMPACTED_MARK: &str =
    "\n\n[context compacted: the model continues from a summary of the conversation above]\n\n";

/// The compaction's id within its session.
fn id(through_seq: u64) -> String {
    format!("compaction-{through_seq}")
}

/// The updates for a live compaction notice: only for a client that advertised compaction.
pub(crate) fn compacting_updates(note: &CompactingRecord, caps: RenderCaps) -> Vec<SessionUpdate> {
    if !caps.compaction {
        return Vec::new();
    }
    let update = match &note.state {
        CompactingState::Started => {
            CompactionUpdate::new(id(note.through_seq), CompactionStatus::InProgress)
        }
        CompactingState::Cancelled => {
            CompactionUpdate::new(id(note.through_seq), CompactionStatus::Cancelled)
        }
        CompactingState::Failed { message } => {
            CompactionUpdate::new(id(note.through_seq), CompactionStatus::Failed)
                .error(SafeText::plain(message))
        }
    };
    vec![SessionUpdate::CompactionUpdate(update)]
}

/// The update for a recorded compaction (the usage after it follows).
pub(crate) fn compacted_updates(compaction: &Compaction, caps: RenderCaps) -> Vec<SessionUpdate> {
    if !caps.compaction {
        return vec![message(COMPACTED_MARK.to_owned())];
    }
    let summary = vec![ContentBlock::from(compaction.summary.clone())];
    vec![SessionUpdate::CompactionUpdate(
        CompactionUpdate::new(id(compaction.through_seq), CompactionStatus::Completed)
            .summary(summary),
    )]
}
