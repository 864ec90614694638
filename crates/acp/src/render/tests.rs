//! The renderer on its own: every event kind in both modes and both terminal settings.

use std::sync::Arc;

use dsh_kernel::Runtime;
use dsh_session::{EventType, SessionEvent, ToolCallRecord, ToolResultRecord};
use dsh_tools::{
    StandardToolRegistry, TerminalExit, Tool, ToolCallView, ToolContext, ToolError, ToolOutput,
    ToolRegistry, ToolResultView, ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{RenderCaps, RenderContext, RenderMode, Renderer, console};

/// A terminal-presented tool (as bash is) and one whose presenters panic.
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

    fn present_result(
        &self,
        _: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        assert!(!self.panics, "a presenter bug");
        Some(ToolResultView::Terminal {
            output: result.content.clone(),
            exit: TerminalExit {
                exit_code: Some(0),
                ..TerminalExit::default()
            },
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

pub(super) fn event(seq: u64, kind: &str, data: Value) -> SessionEvent {
    SessionEvent {
        seq,
        kind: EventType::new(kind).unwrap(),
        time: 0,
        ignorable: false,
        data: serde_json::value::to_raw_value(&data).unwrap(),
    }
}

fn call(step: u32, id: &str, tool: &str, command: &str) -> SessionEvent {
    event(
        0,
        "tool/call",
        json!({"turn": 1, "step": step, "call_id": id, "name": tool,
               "arguments": json!({"command": command}).to_string()}),
    )
}

fn result(step: u32, id: &str, tool: &str, content: &str, is_error: bool) -> SessionEvent {
    event(
        0,
        "tool/result",
        json!({"turn": 1, "step": step, "call_id": id, "name": tool, "content": content,
               "is_error": is_error}),
    )
}

/// Renders `events`, then closes every call still open (as a prompt's end does).
pub(super) fn run(
    events: &[SessionEvent],
    mode: RenderMode,
    cards: bool,
    asks: bool,
) -> Vec<Value> {
    render_all(events, mode, caps(cards, false), asks, true, None)
}

fn caps(terminal_card: bool, compaction: bool) -> RenderCaps {
    RenderCaps {
        terminal_card,
        compaction,
        plan: false,
        notices: false,
        subagents: false,
    }
}

/// Renders `events` and nothing more.
pub(super) fn run_open(
    events: &[SessionEvent],
    mode: RenderMode,
    cards: bool,
    asks: bool,
) -> Vec<Value> {
    render_all(events, mode, caps(cards, false), asks, false, None)
}

fn render_all(
    events: &[SessionEvent],
    mode: RenderMode,
    caps: RenderCaps,
    asks: bool,
    close: bool,
    prices: Option<&dsh_llm::Prices>,
) -> Vec<Value> {
    let (_runtime, tools) = registry();
    let ask = move |_: &str, _: &Value| asks;
    let cx = RenderContext {
        mode,
        caps,
        cwd: std::path::Path::new("/work"),
        tools: &*tools,
        asks: &ask,
        prices,
    };
    let mut renderer = Renderer::new(dsh_session::SessionId::mint());
    let mut out: Vec<Value> = events
        .iter()
        .flat_map(|e| renderer.render(e, &cx))
        .map(|u| serde_json::to_value(u).unwrap())
        .collect();
    if close {
        out.extend(
            renderer
                .close_turn(None)
                .into_iter()
                .map(|u| serde_json::to_value(u).unwrap()),
        );
    }
    out
}

#[test]
fn prompts_are_replayed_whatever_became_of_their_step_and_never_echoed_live() {
    let events = [
        event(
            0,
            "user/message",
            json!({"turn": 1, "step": 1,
            "message": {"id": "m1", "source": {"kind": "user"}, "text": "withdrawn"}}),
        ),
        event(1, "step/end", json!({"turn": 1, "step": 1})),
        event(
            2,
            "user/message",
            json!({"turn": 2, "step": 1,
            "message": {"id": "m2", "source": {"kind": "user"}, "text": "kept"}}),
        ),
        event(
            3,
            "user/message",
            json!({"turn": 2, "step": 1,
            "message": {"id": "m3", "source": {"kind": "plugin", "name": "bash"}, "text": "notice"}}),
        ),
        event(
            4,
            "assistant/chunk",
            json!({"turn": 2, "step": 1, "chunk": {"text_delta": "hi"}}),
        ),
    ];
    let replay = run(&events, RenderMode::Replay, false, false);
    let kinds: Vec<&str> = replay
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "user_message_chunk",
            "agent_message_chunk"
        ]
    );
    assert_eq!(replay[0]["content"]["text"], "withdrawn");
    assert_eq!(replay[1]["content"]["text"], "kept");
    let live = run(&events, RenderMode::Live, false, false);
    assert_eq!(live.len(), 1, "{live:?}");
}

#[test]
fn a_committed_message_is_shown_only_when_its_step_did_not_stream() {
    let streamed = [
        event(
            0,
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"reasoning_delta": "r"}}),
        ),
        event(
            1,
            "assistant/message",
            json!({"turn": 1, "step": 1,
            "message": {"content": "x", "reasoning": "r"}}),
        ),
    ];
    assert_eq!(run(&streamed, RenderMode::Live, false, false).len(), 1);
    let whole = [event(
        0,
        "assistant/message",
        json!({"turn": 1, "step": 1,
        "message": {"content": "answer", "reasoning": "why"}}),
    )];
    let out = run(&whole, RenderMode::Live, false, false);
    assert_eq!(out[0]["sessionUpdate"], "agent_thought_chunk");
    assert_eq!(out[0]["content"]["text"], "why");
    assert_eq!(out[1]["content"]["text"], "answer");
}

#[test]
fn call_ids_are_deterministic_and_a_repeated_call_id_gets_a_suffix() {
    let events = [
        call(1, "c", "sh", "one"),
        call(1, "c", "sh", "two"),
        result(1, "c", "sh", "1", false),
        result(1, "c", "sh", "2", false),
    ];
    let out = run(&events, RenderMode::Live, false, false);
    let ids: Vec<&str> = out
        .iter()
        .map(|u| u["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1:1:c", "1:1:c:2", "1:1:c", "1:1:c:2"]);
    assert_eq!(
        out[2]["content"][0]["content"]["text"],
        "```console\n1\n```"
    );
}

#[test]
fn a_live_call_that_will_be_asked_about_is_announced_pending() {
    let events = [call(1, "c", "sh", "ls")];
    let asked = run(&events, RenderMode::Live, false, true);
    assert!(
        asked[0].get("status").is_none(),
        "pending is omitted: {asked:?}"
    );
    let replayed = run(&events, RenderMode::Replay, false, true);
    assert_eq!(replayed[0]["status"], "in_progress");
}

#[test]
fn a_result_without_its_call_gets_a_stand_in_and_open_calls_close_failed() {
    let events = [
        result(1, "orphan", "sh", "late", false),
        call(2, "open", "sh", "sleep 9"),
        event(
            0,
            "turn/end",
            json!({"turn": 1, "reason": {"kind": "interrupted"}}),
        ),
    ];
    let out = run(&events, RenderMode::Replay, true, false);
    assert_eq!(out[0]["sessionUpdate"], "tool_call");
    assert_eq!(out[0]["title"], "tool");
    assert_eq!(out[1]["status"], "completed");
    assert_eq!(out[2]["sessionUpdate"], "tool_call");
    assert_eq!(out[3]["status"], "failed");
    assert_eq!(
        out[3]["_meta"]["terminal_exit"],
        json!({"terminal_id": "1:2:open", "exit_code": null, "signal": null})
    );
    assert_eq!(out.len(), 4, "nothing after a final status: {out:?}");
}

#[test]
fn a_panicking_presenter_costs_its_card_not_the_render() {
    let events = [
        call(1, "c", "broken", "x"),
        result(1, "c", "broken", "out", false),
        call(1, "d", "unknown", "not json"),
    ];
    let out = run(&events, RenderMode::Live, false, false);
    assert_eq!(out[0]["title"], "broken");
    assert!(out[0].get("kind").is_none(), "other is the default kind");
    assert_eq!(out[1]["content"][0]["content"]["text"], "out");
    assert_eq!(out[2]["title"], "unknown");
}

#[test]
fn error_results_are_failed_in_both_modes() {
    for cards in [false, true] {
        let events = [
            call(1, "c", "sh", "x"),
            result(1, "c", "sh", "no such dir", true),
        ];
        let out = run(&events, RenderMode::Live, cards, false);
        assert_eq!(out[1]["status"], "failed");
        assert_eq!(out[1]["content"][0]["content"]["text"], "no such dir");
    }
}

#[test]
fn the_console_fence_outgrows_any_backtick_run_and_names_a_failure() {
    assert_eq!(console("", Some(0), None), "```console\n(no output)\n```");
    assert_eq!(
        console("a ```` b\n", Some(2), None),
        "`````console\na ```` b\n`````\nexit code: 2"
    );
    assert_eq!(
        console("x", None, Some("SIGKILL")),
        "```console\nx\n```\nterminated by signal: SIGKILL"
    );
}

#[test]
fn outside_text_reaches_the_client_inert_and_only_a_terminal_card_gets_raw_bytes() {
    let hostile = "out\u{1b}]2;pwned\u{7}\u{1b}[31mred\u{1b}[0m\u{9b}2J";
    let events = [
        event(
            0,
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"text_delta": "say\u{1b}]52;c;aGk"}}),
        ),
        event(
            1,
            "assistant/chunk",
            json!({"turn": 1, "step": 1, "chunk": {"text_delta": "=\u{7}more"}}),
        ),
        call(1, "c1", "sh", "echo \u{1b}[2Jhi"),
        result(1, "c1", "sh", hostile, false),
        call(1, "c2", "other", "x"),
        result(1, "c2", "other", hostile, false),
    ];
    for cards in [false, true] {
        let updates = run(&events, RenderMode::Live, cards, false);
        let text: Vec<String> = updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(text.concat(), "saymore", "a sequence split across chunks");
        let mut shown = updates.clone();
        for update in &mut shown {
            // The arguments are data, as the model wrote them, not text to show.
            update.as_object_mut().unwrap().remove("rawInput");
            if let Some(meta) = update.get_mut("_meta") {
                meta.as_object_mut().unwrap().remove("terminal_output");
            }
        }
        let shown = serde_json::to_string(&shown).unwrap();
        for bad in ["\\u001b", "\\u0007", "\\u009b", "\u{9b}"] {
            assert!(!shown.contains(bad), "cards {cards}: {bad} in {shown}");
        }
        assert!(shown.contains("outred2J"), "{shown}");
        let raw: Vec<&Value> = updates
            .iter()
            .filter_map(|u| u["_meta"].get("terminal_output"))
            .collect();
        if cards {
            assert_eq!(
                raw[0]["data"], hostile,
                "the card's emulator gets the bytes"
            );
        } else {
            assert!(raw.is_empty());
        }
    }
}

#[test]
fn each_answer_with_its_context_is_followed_by_a_usage_update() {
    let answered = [event(
        0,
        "assistant/message",
        json!({"turn": 1, "step": 1, "message": {"content": "x"},
               "context": {"used": 1200, "window": 8192}}),
    )];
    for mode in [RenderMode::Live, RenderMode::Replay] {
        let out = run(&answered, mode, false, false);
        let usage = out.last().unwrap();
        assert_eq!(usage["sessionUpdate"], "usage_update", "{out:?}");
        assert_eq!(
            (usage["used"].clone(), usage["size"].clone()),
            (json!(1200), json!(8192))
        );
    }
    // A log written before usage was recorded has none to tell.
    let old = [event(
        0,
        "assistant/message",
        json!({"turn": 1, "step": 1, "message": {"content": "x"}}),
    )];
    let out = run(&old, RenderMode::Replay, false, false);
    assert!(
        out.iter().all(|u| u["sessionUpdate"] != "usage_update"),
        "{out:?}"
    );
}

#[test]
fn a_compaction_is_marked_where_it_happened_in_the_transcript() {
    let events = [event(
        0,
        "context/compacted",
        json!({"summary": "s", "through_seq": 0, "trigger": "auto"}),
    )];
    let out = run(&events, RenderMode::Replay, false, false);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out.iter()
            .all(|u| u["sessionUpdate"] != "compaction_update")
    );
    assert_eq!(out[0]["sessionUpdate"], "agent_message_chunk");
    assert!(
        out[0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("context compacted"),
        "{out:?}"
    );
}

#[test]
fn a_created_file_has_no_old_text_and_an_emptied_or_empty_one_does() {
    let card = |old: &str, created: bool| {
        let view = ToolResultView::Diff {
            path: "a.txt".into(),
            old_text: old.into(),
            new_text: "new\n".into(),
            first_line: 1,
            created,
            summary: String::new(),
        };
        let (content, location) = super::diff_card(std::path::Path::new("/work"), &view).unwrap();
        (serde_json::to_value(content).unwrap(), location)
    };
    let (created, location) = card("", true);
    assert_eq!(created["type"], "diff");
    assert_eq!(created["path"], "/work/a.txt");
    assert!(created["oldText"].is_null(), "{created}");
    assert_eq!(location.line, Some(1));
    // An existing empty file that was written: a change from nothing, not a creation.
    let (written, _) = card("", false);
    assert_eq!(written["oldText"], "");
    // Anything but a change has no diff card.
    let text = ToolResultView::Generic {
        content: Vec::new(),
        summary: None,
    };
    assert!(super::diff_card(std::path::Path::new("/work"), &text).is_none());
}

#[test]
fn a_client_that_advertised_compaction_gets_the_summary_and_the_usage_it_left() {
    let events = [
        event(
            0,
            "assistant/message",
            json!({"turn": 1, "step": 1, "message": {"content": "x"},
                   "context": {"used": 7000, "window": 8192}}),
        ),
        event(
            1,
            "context/compacted",
            json!({"summary": "Goal: \u{1b}[31mred", "through_seq": 0, "trigger": "auto",
                   "tokens_before": 7000, "tokens_after": 300}),
        ),
    ];
    for mode in [RenderMode::Live, RenderMode::Replay] {
        let out = render_all(&events, mode, caps(false, true), false, true, None);
        let kinds: Vec<&str> = out
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "agent_message_chunk",
                "usage_update",
                "compaction_update",
                "usage_update"
            ]
        );
        let update = &out[2];
        assert_eq!(update["compactionId"], "compaction-0");
        assert_eq!(update["status"], "completed");
        assert_eq!(
            update["summary"][0]["text"], "Goal: red",
            "escape sequences are removed from the summary"
        );
        assert_eq!(
            (out[3]["used"].clone(), out[3]["size"].clone()),
            (json!(300), json!(8192))
        );
    }
}

#[test]
fn a_live_compaction_is_shown_only_to_a_client_that_advertised_it() {
    use dsh_agent::record::{CompactTrigger, CompactingRecord, CompactingState};
    let note = |state| CompactingRecord {
        turn: 2,
        step: 1,
        through_seq: 41,
        request: None,
        trigger: CompactTrigger::Manual,
        state,
    };
    let shown = |state, compaction| -> Vec<Value> {
        super::compacting_updates(&note(state), caps(false, compaction))
            .into_iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect()
    };
    assert!(shown(CompactingState::Started, false).is_empty());
    let started = shown(CompactingState::Started, true);
    assert_eq!(started[0]["sessionUpdate"], "compaction_update");
    assert_eq!(started[0]["compactionId"], "compaction-41");
    assert_eq!(started[0]["status"], "in_progress");
    assert_eq!(
        shown(CompactingState::Cancelled, true)[0]["status"],
        "cancelled"
    );
    let failed = shown(
        CompactingState::Failed {
            message: "the server said no".into(),
        },
        true,
    );
    assert_eq!(failed[0]["status"], "failed");
    assert_eq!(failed[0]["error"], "the server said no");
}

#[test]
fn with_prices_configured_each_usage_update_carries_the_session_s_cost_so_far() {
    let prices = dsh_llm::Prices {
        input: 2.0,
        cached_input: Some(0.5),
        output: 8.0,
        currency: "CNY".into(),
    };
    let answer = |seq, input: u64| {
        event(
            seq,
            "assistant/message",
            json!({"turn": 1, "step": seq + 1, "message": {"content": "x"},
                   "usage": {"input_tokens": input, "output_tokens": 100_000,
                             "cache_hit_tokens": 200_000},
                   "context": {"used": input + 100_000, "window": 1_000_000}}),
        )
    };
    let events = [
        answer(0, 500_000),
        answer(1, 600_000),
        event(
            2,
            "context/compacted",
            json!({"summary": "s", "through_seq": 1, "trigger": "auto", "tokens_after": 900,
                   "usage": {"input_tokens": 700_000, "output_tokens": 1_000}}),
        ),
    ];
    let out = render_all(
        &events,
        RenderMode::Replay,
        caps(false, false),
        false,
        true,
        Some(&prices),
    );
    let costs: Vec<f64> = out
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .map(|u| {
            assert_eq!(u["cost"]["currency"], "CNY");
            u["cost"]["amount"].as_f64().unwrap()
        })
        .collect();
    // 300k misses at 2 + 200k hits at 0.5 + 100k out at 8 = 0.6 + 0.1 + 0.8; then 0.8 + 0.1
    // + 0.8 more; then the summary: 700k at 2 + 1k at 8.
    let expected = [1.5, 3.2, 3.2 + 1.4 + 0.008];
    assert_eq!(costs.len(), 3, "{out:?}");
    for (cost, want) in costs.iter().zip(expected) {
        assert!((cost - want).abs() < 1e-9, "{costs:?}");
    }
    let unpriced = run(&events[..1], RenderMode::Replay, false, false);
    assert!(
        unpriced
            .iter()
            .all(|u| u.get("cost").is_none_or(Value::is_null)),
        "{unpriced:?}"
    );
}

#[test]
fn a_turn_dsh_stopped_for_repeating_a_call_is_said_as_a_notice_or_a_line() {
    let events = [event(
        0,
        "turn/end",
        json!({"turn": 1, "reason": {"kind": "repeated_call", "tool": "read"}}),
    )];
    let with_notices = RenderCaps {
        notices: true,
        ..caps(false, false)
    };
    let live = render_all(&events, RenderMode::Live, with_notices, false, false, None);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["sessionUpdate"], "notice", "{live:?}");
    assert!(live[0].to_string().contains("same `read` call"), "{live:?}");
    let replayed = render_all(
        &events,
        RenderMode::Replay,
        with_notices,
        false,
        false,
        None,
    );
    assert!(
        replayed.is_empty(),
        "a notice is of its moment: {replayed:?}"
    );
    for mode in [RenderMode::Live, RenderMode::Replay] {
        let plain = render_all(&events, mode, caps(false, false), false, false, None);
        assert_eq!(
            plain[0]["sessionUpdate"], "agent_message_chunk",
            "{plain:?}"
        );
        assert!(plain[0].to_string().contains("dsh stopped the turn"));
    }
    let completed = [event(
        0,
        "turn/end",
        json!({"turn": 1, "reason": {"kind": "completed"}}),
    )];
    assert!(
        render_all(
            &completed,
            RenderMode::Live,
            with_notices,
            false,
            false,
            None
        )
        .is_empty()
    );
}

#[test]
fn a_hook_run_is_a_notice_to_a_client_that_takes_them_and_only_a_failure_is_a_line_to_others() {
    let ran = |command: &str, error: Option<&str>| {
        event(
            0,
            "hook/ran",
            json!({"turn": 1, "event": "PostToolUse", "command": command, "exit_code": 0,
                   "elapsed_ms": 12, "decision": "ok", "error": error}),
        )
    };
    let events = [
        ran("cargo fmt", None),
        ran("lint.sh", Some("the hook crashed")),
    ];
    let with_notices = RenderCaps {
        notices: true,
        ..caps(false, false)
    };
    let live = render_all(&events, RenderMode::Live, with_notices, false, false, None);
    assert_eq!(live.len(), 2, "{live:?}");
    assert_eq!(live[0]["sessionUpdate"], "notice");
    assert_eq!(live[0]["severity"], "info", "{live:?}");
    assert!(
        live[0]
            .to_string()
            .contains("hook PostToolUse · cargo fmt · ok · 12 ms")
    );
    assert_eq!(live[1]["severity"], "warning", "{live:?}");
    let replayed = render_all(
        &events,
        RenderMode::Replay,
        with_notices,
        false,
        false,
        None,
    );
    assert!(replayed.is_empty(), "{replayed:?}");
    for mode in [RenderMode::Live, RenderMode::Replay] {
        let plain = render_all(&events, mode, caps(false, false), false, false, None);
        assert_eq!(plain.len(), 1, "only the failure: {plain:?}");
        assert_eq!(plain[0]["sessionUpdate"], "agent_message_chunk");
        assert!(
            plain[0]
                .to_string()
                .contains("lint.sh · ok · 12 ms: the hook crashed")
        );
    }
}
