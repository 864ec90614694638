//! Strict parsing and the bundled demo.

use dsh_llm::{FinishReason, Model, ModelErrorKind};
use dsh_llm_replay::{Ending, ItemKind, ReplayModel, ReplayScript};

#[test]
fn every_entry_and_item_kind_parses() {
    let script = ReplayScript::from_json_str(
        r#"{ "version": 1, "name": "all", "prompt": "p", "comment": "c", "entries": [
            { "stream": [ { "reasoning": "r" }, { "text": ["a", "b"], "delay_ms": 5, "repeat": 2 },
                          { "tool_call": { "name": "bash", "arguments": { "command": "ls" } } } ],
              "usage": { "input_tokens": 1, "output_tokens": 2 } },
            { "match": { "last_user_contains": "x", "session_id": "s", "any_contains": "y" }, "finish": "max_tokens" },
            { "finish": "refusal", "item_delay_ms": 3, "ready_file": "r.flag", "comment": "c" },
            { "stream": [ { "text": "t" } ], "hang": true },
            { "hang_ignoring_abort": true },
            { "stall_ms": 10, "finish": "stop" },
            { "error": "plain" },
            { "error": { "kind": "rate_limited", "message": "slow", "status": 429, "retry_after_ms": 1000 } },
            { "stream": [ { "tool_call": { "name": "bash", "args": "not json", "id": "given" } } ] }
        ] }"#,
        "all.json",
    )
    .unwrap();
    assert_eq!(script.name, "all");
    assert_eq!(script.entries.len(), 9);
    assert_eq!(
        script.entries[0].ending,
        Ending::Finish(FinishReason::ToolCalls),
        "tool call infers tool_calls"
    );
    assert_eq!(
        script.entries[1].ending,
        Ending::Finish(FinishReason::Length)
    );
    assert_eq!(
        script.entries[2].ending,
        Ending::Finish(FinishReason::ContentFilter)
    );
    assert!(matches!(
        script.entries[5].ending,
        Ending::Stall { ms: 10, .. }
    ));
    match &script.entries[6].ending {
        Ending::Error(e) => assert_eq!(e.kind, ModelErrorKind::Server),
        other => panic!("{other:?}"),
    }
    match &script.entries[8].stream[0].kind {
        ItemKind::ToolCall { arguments, id, .. } => {
            assert_eq!(arguments, "not json");
            assert_eq!(id.as_deref(), Some("given"));
        }
        other => panic!("{other:?}"),
    }
    let bare =
        ReplayScript::from_json_str(r#"[ { "stream": [ { "text": "hi" } ] } ]"#, "dir/bare.json")
            .unwrap();
    assert_eq!(bare.name, "bare", "the name defaults to the file stem");
}

#[test]
fn violations_name_line_and_column() {
    let cases = [
        "{ \"version\": 1, \"entries\": [\n  { \"stream\": [], \"bogus\": 1 }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"text\": \"\" } ] }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"text\": \"a\", \"repeat\": 0 } ] }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"finish\": \"stop\", \"hang\": true }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"hang\": true, \"stall_ms\": 5 }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"error\": { \"kind\": \"melted\", \"message\": \"m\" } }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"finish\": \"done\" }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"text\": \"a\", \"reasoning\": \"b\" } ] }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"error\": { \"kind\": \"cancelled\", \"message\": \"m\" } }\n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ ] \n] }",
        "{ \"version\": 1, \"entries\": [\n  { \"finish\": \"stop\", \"comment\": 7 }\n] }",
    ];
    for text in cases {
        let err = ReplayScript::from_json_str(text, "bad.json").unwrap_err();
        assert_eq!(err.source, "bad.json");
        assert!(err.line >= 2 && err.column > 0, "{text}: {err}");
        assert!(err.to_string().starts_with("bad.json:"), "{err}");
    }
    assert!(ReplayScript::from_json_str(r#"{ "version": 2, "entries": [] }"#, "v.json").is_err());
}

#[test]
fn the_demo_is_bundled_and_labelled_replay() {
    let demo = ReplayScript::builtin("demo").unwrap();
    assert_eq!(demo.entries.len(), 5);
    assert!(demo.prompt.as_deref().unwrap().contains("directory"));
    assert!(ReplayScript::builtin("nope").is_none());
    let model = ReplayModel::new(demo);
    assert_eq!(model.info().provider, "replay");
    assert_eq!(model.info().model, "replay:demo");
    assert!(model.info().replay);
    assert_eq!(model.info().endpoint, None);
}

#[test]
fn overflowing_usage_and_runaway_repeats_are_refused_with_their_line() {
    let cases = [
        (
            "{ \"version\": 1, \"entries\": [\n  { \"usage\": { \"input_tokens\": 18446744073709551615, \"output_tokens\": 1 } }\n] }",
            "overflows",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"text\": \"a\", \"repeat\": 2000000 } ] }\n] }",
            "`repeat` is at most 100000",
        ),
    ];
    for (text, needle) in cases {
        let err = ReplayScript::from_json_str(text, "bad.json").unwrap_err();
        assert!(err.line >= 2, "{err}");
        assert!(err.message.contains(needle), "{err}");
    }
}

#[test]
fn strictness_names_unknown_error_keys_empty_strings_and_bad_shapes() {
    let cases = [
        (
            "{ \"version\": 1, \"entries\": [\n  { \"error\": { \"kind\": \"server\", \"message\": \"m\", \"stauts\": 500 } }\n] }",
            "unknown field `stauts`",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"error\": \"\" }\n] }",
            "empty message",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"error\": 5 }\n] }",
            "message string or an object",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"match\": { \"any_contains\": \"\" } }\n] }",
            "`match.any_contains` is empty",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"tool_call\": { \"name\": \"bash\", \"args\": {}, \"id\": \"\" } } ] }\n] }",
            "empty `id`",
        ),
        (
            "{ \"version\": 1, \"entries\": [\n  { \"stream\": [ { \"text\": 5 } ] }\n] }",
            "expected a string or a list of strings",
        ),
        (
            "{ \"version\": 1, \"name\": \"\", \"entries\": [] }",
            "`name` is empty",
        ),
        (
            "{ \"version\": 1, \"prompt\": \"\", \"entries\": [] }",
            "`prompt` is empty",
        ),
    ];
    for (text, needle) in cases {
        let err = ReplayScript::from_json_str(text, "bad.json").unwrap_err();
        assert!(err.line >= 1 && err.column > 0, "{text}: {err}");
        assert!(err.message.contains(needle), "{needle}: {err}");
        assert!(!err.message.contains("did not match any variant"), "{err}");
    }
}
