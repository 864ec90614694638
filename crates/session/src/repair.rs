//! Crash repair's closers: the events that close a turn left open by a process
//! that died. A pure function shared by every persistence provider, so a repair interrupted
//! half-way computes the same closers, byte for byte, on the next load.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::event::{EventType, SessionEvent};
use crate::payload::{StepMark, ToolResultRecord, TurnEnd, TurnEndReason};

/// `error_code` of a synthetic result for a call whose body may have run: its `tool/call` was
/// recorded (crash repair), or it was aborted after the cancel grace (the agent loop). The one
/// definition; the tool vocabulary re-exports it.
pub const TOOL_OUTCOME_UNKNOWN: &str = "tool_outcome_unknown";
/// `error_code` of a synthetic result for a call whose body never started. The one
/// definition; the tool vocabulary re-exports it.
pub const TOOL_NOT_STARTED: &str = "tool_not_started";
/// Content of a synthetic result for a recorded call.
pub const OUTCOME_UNKNOWN_TEXT: &str = "This tool call started, but its result was never saved because dsh stopped unexpectedly. Its effects are unknown: repeat it only if it is read-only or idempotent; otherwise check the current state first.";
/// Content of a synthetic result for a call that never started.
pub const NOT_STARTED_TEXT: &str = "This tool call never started because dsh stopped unexpectedly. It may be issued again if it is still needed.";

#[derive(Deserialize)]
struct TurnOnly {
    turn: u32,
}

#[derive(Deserialize)]
struct AssistantMessage {
    turn: u32,
    step: u32,
    message: MessageCalls,
}

#[derive(Deserialize)]
struct MessageCalls {
    #[serde(default)]
    tool_calls: Vec<CallRef>,
}

#[derive(Deserialize)]
struct CallRef {
    id: String,
    name: String,
}

#[derive(Deserialize)]
struct CallId {
    call_id: String,
}

struct Pending {
    turn: u32,
    step: u32,
    call_id: String,
    name: String,
    recorded: Option<u64>,
}

fn parse<'a, T: Deserialize<'a>>(event: &'a SessionEvent) -> Option<T> {
    serde_json::from_str(event.data.get()).ok()
}

/// The closers of a log whose final turn is open: one `tool/result` per pending call (in
/// registration order), `step/end` if a step is open, then `turn/end` with reason
/// `interrupted`. Seqs continue after the last event; every closer reuses its `time`. A log
/// whose last turn is closed (or that has none) needs no closers.
pub fn interrupted_turn_closers(events: &[Arc<SessionEvent>]) -> Vec<SessionEvent> {
    let mut turn: Option<u32> = None;
    let mut step: Option<StepMark> = None;
    let mut pending: Vec<Pending> = Vec::new();
    // Every `turn/start` resets the state below, so only the last turn can need closers:
    // start there instead of parsing the payloads of the whole log.
    let last_start = events
        .iter()
        .rposition(|e| e.kind.as_str() == EventType::TURN_START)
        .unwrap_or(events.len());
    for event in &events[last_start..] {
        match event.kind.as_str() {
            EventType::TURN_START => {
                turn = parse::<TurnOnly>(event).map(|t| t.turn);
                step = None;
                pending.clear();
            }
            EventType::TURN_END => {
                turn = None;
                step = None;
                pending.clear();
            }
            EventType::STEP_START => step = parse::<StepMark>(event),
            EventType::STEP_END => {
                step = None;
                pending.clear();
            }
            EventType::ASSISTANT_MESSAGE => {
                if let Some(message) = parse::<AssistantMessage>(event) {
                    pending.extend(message.message.tool_calls.into_iter().map(|call| Pending {
                        turn: message.turn,
                        step: message.step,
                        call_id: call.id,
                        name: call.name,
                        recorded: None,
                    }));
                }
            }
            EventType::TOOL_CALL => {
                if let Some(call) = parse::<CallId>(event)
                    && let Some(p) = pending.iter_mut().find(|p| p.call_id == call.call_id)
                {
                    p.recorded = Some(event.seq);
                }
            }
            EventType::TOOL_RESULT => {
                if let Some(result) = parse::<CallId>(event) {
                    pending.retain(|p| p.call_id != result.call_id);
                }
            }
            _ => {}
        }
    }
    let (Some(turn), Some(last)) = (turn, events.last()) else {
        return Vec::new();
    };
    let mut seq = last.seq + 1;
    let time = last.time;
    let mut closers = Vec::new();
    let mut push = |kind: &'static str, data: String| {
        // The payloads below always serialize and always name core types.
        if let (Ok(kind), Ok(data)) = (EventType::new(kind), RawValue::from_string(data)) {
            closers.push(SessionEvent {
                seq,
                kind,
                time,
                ignorable: false,
                data,
            });
            seq += 1;
        }
    };
    for p in pending {
        let (code, text) = match p.recorded {
            Some(_) => (TOOL_OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_TEXT),
            None => (TOOL_NOT_STARTED, NOT_STARTED_TEXT),
        };
        let result = ToolResultRecord {
            turn: p.turn,
            step: p.step,
            call_id: p.call_id,
            name: p.name,
            content: text.to_owned(),
            is_error: true,
            error_code: Some(code.to_owned()),
            meta: None,
            call_seq: p.recorded,
        };
        push(
            EventType::TOOL_RESULT,
            serde_json::to_string(&result).unwrap_or_default(),
        );
    }
    if let Some(step) = step {
        push(
            EventType::STEP_END,
            serde_json::to_string(&step).unwrap_or_default(),
        );
    }
    let end = TurnEnd {
        turn,
        reason: TurnEndReason::Interrupted,
    };
    push(
        EventType::TURN_END,
        serde_json::to_string(&end).unwrap_or_default(),
    );
    closers
}
