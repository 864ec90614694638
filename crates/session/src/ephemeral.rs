//! What the observers of a live session are told that is never stored: a command's output
//! as it arrives, say. It reaches observers in order with the session's events (an ephemeral
//! published before an append is seen before it), and never the log: after a crash or a
//! reload it is simply gone, and whatever it foreshadowed is in the durable events.

use std::sync::Arc;

use serde_json::value::RawValue;

use crate::event::EventType;

/// One ephemeral notice of a session.
#[derive(Clone, Debug)]
pub struct Ephemeral {
    /// What it is (`tool/progress`).
    pub kind: EventType,
    /// The seq of the next event the session will append: the notice comes after every event
    /// before it.
    pub before_seq: u64,
    /// Its payload, as the publisher serialized it.
    pub data: Arc<RawValue>,
}
