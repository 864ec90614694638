//! Property tests of the renderer over arbitrary event sequences — calls and results in any
//! order, repeated call ids, results without calls, aborted turns, prompts never answered —
//! as a repaired or hostile log can hold them.

use std::collections::{HashMap, HashSet};

use proptest::prelude::*;
use serde_json::{Value, json};

use super::RenderMode;
use super::tests::{event, run};
use dsh_session::SessionEvent;

/// One event of a small world: two turns, two steps, two call ids, two tools.
fn one_event() -> impl Strategy<Value = SessionEvent> {
    let at = (1u32..=2, 1u32..=2);
    let id = prop_oneof![Just("a"), Just("b")];
    let tool = prop_oneof![Just("sh"), Just("broken"), Just("missing")];
    prop_oneof![
        (at.clone(), id.clone(), tool.clone()).prop_map(|((turn, step), id, tool)| event(
            0,
            "tool/call",
            json!({"turn": turn, "step": step, "call_id": id, "name": tool,
                   "arguments": json!({"command": "c"}).to_string()}),
        )),
        (at.clone(), id, tool, any::<bool>()).prop_map(|((turn, step), id, tool, error)| event(
            0,
            "tool/result",
            json!({"turn": turn, "step": step, "call_id": id, "name": tool,
                   "content": "out", "is_error": error}),
        )),
        at.clone().prop_map(|(turn, step)| event(
            0,
            "assistant/chunk",
            json!({"turn": turn, "step": step, "chunk": {"text_delta": "t"}}),
        )),
        at.clone().prop_map(|(turn, step)| event(
            0,
            "assistant/message",
            json!({"turn": turn, "step": step, "message": {"content": "m"}}),
        )),
        at.clone().prop_map(|(turn, step)| event(
            0,
            "user/message",
            json!({"turn": turn, "step": step,
                   "message": {"id": "u", "source": {"kind": "user"}, "text": "p"}}),
        )),
        at.prop_map(|(turn, step)| event(0, "step/end", json!({"turn": turn, "step": step}))),
        (1u32..=2).prop_map(|turn| event(
            0,
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "aborted", "cause": "user"}}),
        )),
    ]
}

/// Every tool-call rule a client relies on, over one rendered sequence that ends with every
/// open call closed: announced once before any update, nothing after a final status, and
/// every call final in the end.
fn calls_are_well_formed(updates: &[Value]) -> Result<(), TestCaseError> {
    let mut announced = HashSet::new();
    let mut finished = HashSet::new();
    for update in updates {
        let Some(id) = update["toolCallId"].as_str() else {
            continue;
        };
        match update["sessionUpdate"].as_str() {
            Some("tool_call") => {
                prop_assert!(announced.insert(id.to_owned()), "{id} announced twice");
            }
            Some("tool_call_update") => {
                prop_assert!(
                    announced.contains(id),
                    "{id} updated before its announcement"
                );
                prop_assert!(
                    !finished.contains(id),
                    "{id} updated after its final status"
                );
                if matches!(update["status"].as_str(), Some("completed" | "failed")) {
                    finished.insert(id.to_owned());
                }
            }
            other => prop_assert!(false, "unexpected update kind {other:?}"),
        }
    }
    prop_assert_eq!(&announced, &finished, "calls left open");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_event_sequence_renders_well_formed_tool_calls(
        events in proptest::collection::vec(one_event(), 0..40),
        cards in any::<bool>(),
        asks in any::<bool>(),
    ) {
        for mode in [RenderMode::Live, RenderMode::Replay] {
            let updates = run(&events, mode, cards, asks);
            let calls: Vec<Value> = updates
                .into_iter()
                .filter(|u| u.get("toolCallId").is_some())
                .collect();
            calls_are_well_formed(&calls)?;
        }
    }

    #[test]
    fn a_turn_end_closes_every_call_of_that_turn(
        events in proptest::collection::vec(one_event(), 0..40),
        turn in 1u32..=2,
    ) {
        let mut all = events;
        all.push(event(0, "turn/end", json!({"turn": turn, "reason": {"kind": "aborted", "cause": "user"}})));
        // Rendered without the final close-everything, only the turn's own end closes.
        let updates = super::tests::run_open(&all, RenderMode::Live, false, false);
        let mut open: HashMap<String, u32> = HashMap::new();
        for update in &updates {
            let Some(id) = update["toolCallId"].as_str() else { continue };
            let of_turn: u32 = id.split(':').next().and_then(|t| t.parse().ok()).unwrap_or(0);
            match update["status"].as_str() {
                Some("completed" | "failed") => { open.remove(id); }
                _ if update["sessionUpdate"] == "tool_call" => { open.insert(id.to_owned(), of_turn); }
                _ => {}
            }
        }
        prop_assert!(open.values().all(|t| *t != turn), "open after its turn ended: {open:?}");
    }

    #[test]
    fn a_replay_shows_what_live_showed_plus_the_answered_prompts(
        events in proptest::collection::vec(one_event(), 0..40),
        cards in any::<bool>(),
    ) {
        let live = run(&events, RenderMode::Live, cards, false);
        let replay: Vec<Value> = run(&events, RenderMode::Replay, cards, false)
            .into_iter()
            .filter(|u| u["sessionUpdate"] != "user_message_chunk")
            .collect();
        prop_assert_eq!(live, replay);
    }
}
