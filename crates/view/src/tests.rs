//! The projector on its own: the card rules over any sequence of records, live equal to
//! replay however the streams were cut, and every string it names made safe.

use std::sync::Arc;

use dsh_kernel::Runtime;
use dsh_session::{EventType, SessionEvent, SessionId, ToolCallRecord};
use dsh_tools::{
    StandardToolRegistry, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolSchema,
};
use futures::future::BoxFuture;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{CardEnd, Look, Projector, Shown};

/// A tool presented as a terminal, as bash is; and one whose presenter panics.
struct Shell {
    panics: bool,
}

impl Tool for Shell {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: if self.panics { "broken" } else { "sh" }.into(),
            description: "test".into(),
            parameters: json!({"type": "object"}),
        }
    }

    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("")) })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        assert!(!self.panics, "a presenter bug");
        let args: Value = serde_json::from_str(&call.arguments).ok()?;
        Some(ToolCallView::Terminal {
            command: args["command"].as_str()?.to_owned(),
            description: None,
            cwd: None,
            raw_input: args,
        })
    }
}

fn registry() -> (Runtime, Arc<StandardToolRegistry>) {
    let runtime = Runtime::new();
    let tools = Arc::new(StandardToolRegistry::new());
    for panics in [false, true] {
        tools
            .register(runtime.scope(), Arc::new(Shell { panics }))
            .unwrap();
    }
    (runtime, tools)
}

fn event(kind: &str, data: Value) -> SessionEvent {
    SessionEvent {
        seq: 0,
        kind: EventType::new(kind).unwrap(),
        time: 0,
        ignorable: false,
        data: serde_json::value::to_raw_value(&data).unwrap(),
    }
}

fn session() -> SessionId {
    SessionId::parse("01a24cf7-2273-7407-bb3c-8c9b64784fc0").unwrap()
}

/// Projects `events`, then closes what is open (as the end of a replay does).
fn project(events: &[SessionEvent], tools: &dyn ToolRegistry) -> Vec<Shown> {
    let mut projector = Projector::new(session());
    let mut out: Vec<Shown> = events
        .iter()
        .flat_map(|e| projector.event(e, tools))
        .map(|v| v.shown)
        .collect();
    out.extend(projector.close_turn(None).into_iter().map(|v| v.shown));
    out
}

fn chunk(step: u32, kind: &str, text: &str) -> SessionEvent {
    event(
        "assistant/chunk",
        json!({"turn": 1, "step": step, "chunk": {kind: text}}),
    )
}

/// One event of a small world: two turns, two steps, two call ids, three tools.
fn one_event() -> impl Strategy<Value = SessionEvent> {
    let at = (1u32..=2, 1u32..=2);
    let id = prop_oneof![Just("a"), Just("b")];
    let tool = prop_oneof![Just("sh"), Just("broken"), Just("missing")];
    prop_oneof![
        (at.clone(), id.clone(), tool.clone()).prop_map(|((turn, step), id, tool)| event(
            "tool/call",
            json!({"turn": turn, "step": step, "call_id": id, "name": tool,
                   "arguments": json!({"command": "c"}).to_string()}),
        )),
        (at.clone(), id, tool, any::<bool>()).prop_map(|((turn, step), id, tool, error)| event(
            "tool/result",
            json!({"turn": turn, "step": step, "call_id": id, "name": tool,
                   "content": "out", "is_error": error}),
        )),
        at.clone().prop_map(|(turn, step)| event(
            "assistant/message",
            json!({"turn": turn, "step": step, "message": {"content": "m"}}),
        )),
        at.prop_map(|(turn, step)| event("step/end", json!({"turn": turn, "step": step}))),
        (1u32..=2).prop_map(|turn| event(
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "aborted", "cause": "user"}}),
        )),
    ]
}

/// Text cut into pieces at the byte offsets `cuts` picks (on character boundaries).
fn cut(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| c % (text.len() + 1))
        .filter(|c| text.is_char_boundary(*c))
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for to in at.into_iter().chain([text.len()]) {
        if to > from {
            pieces.push(text[from..to].to_owned());
            from = to;
        }
    }
    pieces
}

/// The answer and the reasoning a view shows, joined, and the other events in order.
fn joined(shown: Vec<Shown>) -> (String, String, Vec<Shown>) {
    let (mut text, mut reasoning, mut rest) = (String::new(), String::new(), Vec::new());
    for s in shown {
        match s {
            Shown::Text(t) => text.push_str(&t),
            Shown::Reasoning(r) => reasoning.push_str(&r),
            other => rest.push(other),
        }
    }
    (text, reasoning, rest)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_card_opens_once_before_it_closes_and_every_card_closes(
        events in proptest::collection::vec(one_event(), 0..40),
    ) {
        let (_runtime, tools) = registry();
        let mut open = std::collections::HashSet::new();
        let mut seen = std::collections::HashSet::new();
        for shown in project(&events, &*tools) {
            match shown {
                Shown::CallOpened(card) => {
                    prop_assert!(seen.insert(card.id.clone()), "{} opened twice", card.id);
                    open.insert(card.id.clone());
                }
                Shown::CallClosed(closed) => {
                    prop_assert!(open.remove(&closed.card.id), "{} closed unopened", closed.card.id);
                }
                Shown::TurnEnded { turn, .. } => {
                    prop_assert!(
                        open.iter().all(|id| !id.starts_with(&format!("{turn}:"))),
                        "cards of turn {turn} open at its end: {open:?}"
                    );
                }
                _ => {}
            }
        }
        prop_assert!(open.is_empty(), "left open: {open:?}");
    }

    #[test]
    fn live_pieces_show_what_the_whole_log_shows(
        text in "[a-z \\x1b\\[\\]0-9;\\x07é\\n]{0,40}",
        reasoning in "[a-z \\x1b\\]2;\\x07\\n]{0,30}",
        text_cuts in proptest::collection::vec(any::<usize>(), 0..8),
        reasoning_cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let (_runtime, tools) = registry();
        let answer = || event(
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"content": text, "reasoning": reasoning}}),
        );
        // Stored whole: one chunk each (a stream with nothing in it has none).
        let mut whole: Vec<SessionEvent> = [("reasoning_delta", &reasoning), ("text_delta", &text)]
            .into_iter()
            .filter(|(_, t)| !t.is_empty())
            .map(|(kind, t)| chunk(1, kind, t))
            .collect();
        whole.push(answer());
        // Live: the same streams, cut anywhere, escape sequences included.
        let mut pieces: Vec<SessionEvent> = cut(&reasoning, &reasoning_cuts)
            .iter()
            .map(|p| chunk(1, "reasoning_delta", p))
            .collect();
        pieces.extend(cut(&text, &text_cuts).iter().map(|p| chunk(1, "text_delta", p)));
        pieces.push(answer());
        prop_assert_eq!(joined(project(&whole, &*tools)), joined(project(&pieces, &*tools)));
    }
}

#[test]
fn names_titles_and_plans_from_the_model_are_made_safe() {
    let (_runtime, tools) = registry();
    let hostile = "x\u{1b}]2;pwned\u{7}\u{1b}[2J\u{1b}]52;c;aGk=\u{7}";
    let events = [
        event(
            "user/message",
            json!({"turn": 1, "step": 1,
                   "message": {"id": "u", "source": {"kind": "user"}, "text": hostile}}),
        ),
        event(
            "session/title",
            json!({"title": hostile, "source": "prompt"}),
        ),
        event(
            "tool/call",
            json!({"turn": 1, "step": 1, "call_id": "a", "name": hostile, "arguments": "{}"}),
        ),
        event(
            "tool/call",
            json!({"turn": 1, "step": 1, "call_id": "b", "name": "sh",
                   "arguments": json!({"command": hostile}).to_string()}),
        ),
        event(
            "plan/updated",
            json!({"turn": 1, "step": 1, "call_id": "c",
                   "entries": [{"content": hostile, "status": "pending"}]}),
        ),
    ];
    let mut strings = Vec::new();
    for shown in project(&events, &*tools) {
        match shown {
            Shown::Prompt { text, .. } | Shown::Title(text) => strings.push(text),
            Shown::CallOpened(card) => {
                strings.extend([card.name.clone(), card.title.clone()]);
                if let Look::Terminal { command, .. } = &card.look {
                    strings.push(command.clone());
                }
            }
            Shown::Plan { entries, .. } => strings.extend(entries.into_iter().map(|e| e.content)),
            _ => {}
        }
    }
    assert_eq!(strings.len(), 8, "{strings:?}");
    for string in strings {
        assert!(!string.contains(['\u{1b}', '\u{7}']), "{string:?}");
    }
}

#[test]
fn a_panicking_presenter_costs_its_card_its_looks_only() {
    let (_runtime, tools) = registry();
    let events = [
        event(
            "tool/call",
            json!({"turn": 1, "step": 1, "call_id": "a", "name": "broken",
                   "arguments": json!({"command": "c"}).to_string()}),
        ),
        event(
            "tool/call",
            json!({"turn": 1, "step": 1, "call_id": "b", "name": "sh",
                   "arguments": json!({"command": "ls"}).to_string()}),
        ),
        event(
            "tool/result",
            json!({"turn": 1, "step": 1, "call_id": "a", "name": "broken",
                   "content": "out", "is_error": false}),
        ),
    ];
    let shown = project(&events, &*tools);
    let looks: Vec<&Look> = shown
        .iter()
        .filter_map(|s| match s {
            Shown::CallOpened(card) => Some(&card.look),
            _ => None,
        })
        .collect();
    assert!(matches!(looks[0], Look::Generic { .. }), "{looks:?}");
    assert!(
        matches!(looks[1], Look::Terminal { command, .. } if command == "ls"),
        "{looks:?}"
    );
    let ends: Vec<&CardEnd> = shown
        .iter()
        .filter_map(|s| match s {
            Shown::CallClosed(closed) => Some(&closed.end),
            _ => None,
        })
        .collect();
    assert!(matches!(ends[0], CardEnd::Completed { content, .. } if content == "out"));
    assert_eq!(ends[1], &CardEnd::Abandoned);
}

#[test]
fn a_prompt_shows_once_its_step_does_and_its_title_after_it() {
    let (_runtime, tools) = registry();
    let prompt = || {
        event(
            "user/message",
            json!({"turn": 1, "step": 1,
                   "message": {"id": "u", "source": {"kind": "user"}, "text": "hi"}}),
        )
    };
    let events = [
        prompt(),
        event("session/title", json!({"title": "hi", "source": "prompt"})),
        chunk(1, "text_delta", "hello"),
    ];
    let shown = project(&events, &*tools);
    assert!(
        matches!(&shown[0], Shown::Prompt { text, .. } if text == "hi"),
        "{shown:?}"
    );
    assert_eq!(shown[1], Shown::Title("hi".into()));
    assert_eq!(shown[2], Shown::Text("hello".into()));
    // A turn that ended before its prompt's step showed anything does not show it.
    let unanswered = [
        prompt(),
        event(
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "aborted", "cause": "user"}}),
        ),
    ];
    assert!(matches!(
        project(&unanswered, &*tools).as_slice(),
        [Shown::TurnEnded { .. }]
    ));
}

fn header(id: &str, parent: Option<SessionId>, call: Option<&str>) -> dsh_session::SessionHeader {
    dsh_session::SessionHeader {
        version: dsh_session::SESSION_FORMAT_VERSION,
        id: SessionId::parse(id).unwrap(),
        created_at: 0,
        cwd: "/w".into(),
        parent,
        seed_len: None,
        parent_call: call.map(Into::into),
    }
}

const CHILD: &str = "01a24cf7-2273-7407-bb3c-8c9b64784fc1";
const GRANDCHILD: &str = "01a24cf7-2273-7407-bb3c-8c9b64784fc2";

#[test]
fn a_child_started_by_an_open_call_is_adopted_under_its_card_and_shown_in_its_name() {
    let (_runtime, tools) = registry();
    let mut family = crate::Family::new(Projector::new(session()));
    let call = event(
        "tool/call",
        json!({"turn": 1, "step": 1, "call_id": "t1", "name": "sh",
               "arguments": json!({"command": "delegate"}).to_string()}),
    );
    let mut out = Vec::new();
    family.event_into(&session(), &call, &*tools, &mut out);
    out.clear();
    // A fork names a parent but no call: not a child.
    assert!(!family.adopt(&header(CHILD, Some(session()), None), &mut out));
    assert!(family.adopt(&header(CHILD, Some(session()), Some("t1")), &mut out));
    // Adopted once.
    assert!(!family.adopt(&header(CHILD, Some(session()), Some("t1")), &mut out));
    let [adopted] = out.as_slice() else {
        panic!("{out:?}")
    };
    assert_eq!(adopted.session.as_str(), CHILD);
    let Shown::Subagent(child) = &adopted.shown else {
        panic!("{adopted:?}")
    };
    assert_eq!(child.card.as_deref(), Some("1:1:t1"));
    assert_eq!((child.depth, child.label.as_str()), (1, "delegate"));
    // The child's own events come out in its name.
    let child_id = SessionId::parse(CHILD).unwrap();
    let mut out = Vec::new();
    let child_call = event(
        "tool/call",
        json!({"turn": 1, "step": 1, "call_id": "c", "name": "sh",
               "arguments": json!({"command": "ls"}).to_string()}),
    );
    family.event_into(&child_id, &child_call, &*tools, &mut out);
    assert!(out.iter().all(|e| e.session == child_id), "{out:?}");
    let lines: Vec<String> = out
        .iter()
        .filter_map(|e| crate::child_line(&e.shown))
        .collect();
    assert_eq!(lines, ["$ ls"]);
    // A grandchild nests one deeper; a stranger's session is not followed.
    assert!(family.adopt(
        &header(GRANDCHILD, Some(child_id.clone()), Some("c")),
        &mut out
    ));
    let stranger = header(
        "01a24cf7-2273-7407-bb3c-8c9b64784fc3",
        Some(SessionId::parse("01a24cf7-2273-7407-bb3c-8c9b64784fc4").unwrap()),
        Some("t1"),
    );
    assert!(!family.adopt(&stranger, &mut out));
    let mut out = Vec::new();
    family.event_into(&stranger.id, &child_call, &*tools, &mut out);
    assert!(out.is_empty());
    assert_eq!(family.children(), 2);
    family.release(&child_id);
    assert_eq!(family.children(), 1);
}
