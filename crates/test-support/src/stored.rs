//! Session logs for tests: ones stored by earlier versions of dsh, under `fixtures/logs/`
//! (every reader of the log must keep loading them), and small ones built in place.

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

/// A log of `(type, payload)` pairs, the payload JSON text (`&str`) or a `serde_json::Value`:
/// seqs from 0, times rising from 1000.
pub fn log<D: std::fmt::Display>(entries: &[(&str, D)]) -> Vec<Arc<SessionEvent>> {
    entries
        .iter()
        .enumerate()
        .map(|(seq, (kind, data))| {
            Arc::new(SessionEvent {
                seq: seq as u64,
                kind: dsh_session::EventType::new(kind).unwrap(),
                time: 1000 + seq as i64,
                ignorable: false,
                data: serde_json::value::RawValue::from_string(data.to_string()).unwrap(),
            })
        })
        .collect()
}
