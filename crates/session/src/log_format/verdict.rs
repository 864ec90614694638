//! What a load makes of a log's records, whoever stores them: the events to keep, the torn
//! tail to cut (only after the last completed turn), the closers of a turn a crash left open,
//! or the refusal (damage before the last completed turn, an event type nobody registered).

use std::sync::Arc;

use super::scan::Analysis;
use crate::repair::interrupted_turn_closers;
use crate::{
    EventType, EventVocabulary, PersistenceError, RepairReport, SessionEvent, SessionId,
    SessionLocation,
};

/// A log a load can take.
pub struct Verdict {
    /// The events kept, then the closers.
    pub events: Vec<Arc<SessionEvent>>,
    /// The closers alone (already in `events`), for the provider to store.
    pub closers: Vec<Arc<SessionEvent>>,
    /// Where the kept records end, in the bytes after the header.
    pub kept_end: u64,
    /// What the load drops and adds.
    pub report: RepairReport,
}

impl Verdict {
    /// Whether storing the load's result changes what is stored.
    pub fn repairs(&self) -> bool {
        self.report.dropped_records > 0 || !self.closers.is_empty()
    }
}

/// Why a load is refused; the provider names where the log is.
pub enum Refusal {
    /// Damage a repair may not cut (before the last completed turn, or what repair needs).
    Corrupt {
        /// The 1-based record (the header is 1).
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// A required event type this dsh does not know.
    Unsupported {
        /// The event's seq.
        seq: u64,
        /// Its type.
        kind: String,
    },
}

impl Refusal {
    /// The refusal as the persistence seam reports it, for the log of `id` at `location`.
    pub fn into_error(self, id: &SessionId, location: SessionLocation) -> PersistenceError {
        match self {
            Refusal::Corrupt { line, reason } => PersistenceError::Corrupt {
                id: id.clone(),
                location,
                line: Some(line),
                reason,
            },
            Refusal::Unsupported { seq, kind } => PersistenceError::UnsupportedEvent {
                id: id.clone(),
                location,
                seq,
                kind,
            },
        }
    }
}

/// The verdict on `analysis` for a reader that knows `known`.
pub fn judge(analysis: Analysis, known: &EventVocabulary) -> Result<Verdict, Refusal> {
    if let Some((line, reason)) = analysis.invalid {
        // Repair could not close such a turn, so the session would load and never resume.
        return Err(Refusal::Corrupt { line, reason });
    }
    if let (Some((line, reason)), Some(last_end)) = (&analysis.defect, analysis.last_turn_end)
        && *line <= last_end
    {
        return Err(Refusal::Corrupt {
            line: *line,
            reason: format!("{reason}; the damage lies before the last completed turn"),
        });
    }
    // A log holds few distinct types: each is looked up once.
    let mut known_kinds: Vec<&EventType> = Vec::new();
    for event in &analysis.kept {
        if event.ignorable || known_kinds.contains(&&event.kind) {
            continue;
        }
        if known.class(&event.kind).is_none() {
            return Err(Refusal::Unsupported {
                seq: event.seq,
                kind: event.kind.to_string(),
            });
        }
        known_kinds.push(&event.kind);
    }
    let closers: Vec<Arc<SessionEvent>> = interrupted_turn_closers(&analysis.kept)
        .into_iter()
        .map(Arc::new)
        .collect();
    let report = RepairReport {
        dropped_records: analysis.dropped_records,
        dropped_bytes: analysis.dropped_bytes,
        first_dropped: analysis.defect.as_ref().map(|(line, _)| *line),
        closers: closers.len() as u64,
    };
    let mut events = analysis.kept;
    events.extend(closers.iter().cloned());
    Ok(Verdict {
        events,
        closers,
        kept_end: analysis.kept_end,
        report,
    })
}
