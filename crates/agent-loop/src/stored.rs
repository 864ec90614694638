//! What a stored log says about continuing it: whether it leaves a turn open, and which turn
//! comes next. Pure functions over the loaded events, so a resume decides the same way every
//! time.

use std::sync::Arc;

use dsh_session::{EventType, SessionEvent, TurnStart};

/// Why a loaded log cannot be continued: a turn or step it leaves open.
pub(crate) fn open_turn(events: &[Arc<SessionEvent>]) -> Option<String> {
    let (mut turn, mut step) = (false, false);
    for event in events {
        match event.kind.as_str() {
            EventType::TURN_START => turn = true,
            EventType::TURN_END => {
                turn = false;
                step = false;
            }
            EventType::STEP_START => step = true,
            EventType::STEP_END => step = false,
            _ => {}
        }
    }
    match (turn, step) {
        (_, true) => Some("the log ends inside a step".into()),
        (true, false) => Some("the log ends inside a turn".into()),
        _ => None,
    }
}

/// The number of the last turn the log started (0 for none): the next turn is one more.
pub(crate) fn last_turn(events: &[Arc<SessionEvent>]) -> u32 {
    events
        .iter()
        .rev()
        .filter(|e| e.kind.as_str() == EventType::TURN_START)
        .find_map(|e| serde_json::from_str::<TurnStart>(e.data.get()).ok())
        .map_or(0, |t| t.turn)
}

/// Whether the log names its session: a title, or a prompt (a log of a dsh that wrote no
/// titles is named by its first prompt, read by the listing, and is not renamed by a later one).
pub(crate) fn titled(events: &[Arc<SessionEvent>]) -> bool {
    events.iter().any(|e| {
        let kind = e.kind.as_str();
        kind == dsh_session::SESSION_TITLE || kind == EventType::USER_MESSAGE
    })
}

#[cfg(test)]
mod tests {
    use dsh_test_support::stored::log;

    use super::*;

    const START: (&str, &str) = ("turn/start", r#"{"turn":4}"#);
    const STEP: (&str, &str) = ("step/start", r#"{"turn":4,"step":1}"#);
    const STEP_END: (&str, &str) = ("step/end", r#"{"turn":4,"step":1}"#);
    const END: (&str, &str) = ("turn/end", r#"{"turn":4,"reason":{"kind":"completed"}}"#);

    #[test]
    fn a_log_is_continued_only_when_every_turn_and_step_is_closed() {
        assert_eq!(open_turn(&[]), None);
        assert_eq!(open_turn(&log(&[START, STEP, STEP_END, END])), None);
        assert_eq!(
            open_turn(&log(&[START, STEP])).as_deref(),
            Some("the log ends inside a step")
        );
        assert_eq!(
            open_turn(&log(&[START, STEP, STEP_END])).as_deref(),
            Some("the log ends inside a turn")
        );
    }

    #[test]
    fn the_next_turn_follows_the_last_one_started() {
        assert_eq!(last_turn(&[]), 0);
        assert_eq!(last_turn(&log(&[START, STEP, STEP_END, END])), 4);
        let damaged = ("turn/start", r#"{"turn":"five"}"#);
        assert_eq!(
            last_turn(&log(&[START, END, damaged])),
            4,
            "a damaged turn/start is passed over"
        );
    }
}
