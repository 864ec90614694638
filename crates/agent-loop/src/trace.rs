//! What the loop tells `tracing`: a span per turn (`info`, with the session and turn), per
//! step, per model call and per tool call (`debug`), each closed by an event carrying its
//! duration, so `DSH_LOG=debug` shows the structure of a turn and where its time went.

use std::time::Instant;

/// Milliseconds since `since`, for the `elapsed_ms` field.
pub(crate) fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
