//! Session logs stored by earlier versions of dsh, under `fixtures/logs/`: every reader of
//! the log must keep loading them.

use std::sync::Arc;

use dsh_session::SessionEvent;

/// A log written before the records were typed: four turns through the built binary (tools,
/// a length cut, a server error, a cancelled stream), then a crash-repaired turn, a plugin's
/// message and an ignorable kind this dsh does not know, added by hand. 52 events.
pub const BEFORE_TYPED_RECORDS: &str = include_str!("../fixtures/logs/before-typed-records.jsonl");

/// The events of a stored log (its header line skipped).
pub fn events(log: &str) -> Vec<Arc<SessionEvent>> {
    log.lines()
        .skip(1)
        .map(|line| Arc::new(SessionEvent::decode(line.as_bytes()).unwrap()))
        .collect()
}
