//! The stream checker accepts valid sequences and names each violation.

use dsh_llm::{FinishReason, ModelError, ModelErrorKind, ModelEvent, StreamChecker, Usage};

fn start(i: u32) -> ModelEvent {
    ModelEvent::ToolCallStart {
        index: i,
        id: format!("c{i}"),
        name: "bash".into(),
    }
}
fn args(i: u32, s: &str) -> ModelEvent {
    ModelEvent::ToolCallArgumentsDelta {
        index: i,
        fragment: s.into(),
    }
}
fn end(i: u32, s: &str) -> ModelEvent {
    ModelEvent::ToolCallEnd {
        index: i,
        id: format!("c{i}"),
        name: "bash".into(),
        arguments: s.into(),
    }
}
fn finish() -> ModelEvent {
    ModelEvent::Finish {
        reason: FinishReason::Stop,
    }
}
fn usage() -> ModelEvent {
    ModelEvent::Usage(Usage::default())
}

fn check(items: Vec<Result<ModelEvent, ModelError>>) -> Result<(), String> {
    let mut checker = StreamChecker::new();
    for item in &items {
        checker.observe(item).map_err(|v| v.rule.to_string())?;
    }
    checker.end().map_err(|v| v.rule.to_string())
}

#[test]
fn valid_streams_pass() {
    let err = ModelError::new(ModelErrorKind::Server, "boom");
    let cases = vec![
        vec![
            Ok(ModelEvent::TextDelta("hi".into())),
            Ok(usage()),
            Ok(finish()),
        ],
        vec![Ok(finish())],
        vec![
            Ok(ModelEvent::ReasoningDelta("think".into())),
            Ok(ModelEvent::TextDelta("a".into())),
            Ok(ModelEvent::ReasoningDelta("more".into())),
            Ok(start(0)),
            Ok(start(1)),
            Ok(args(0, "{\"a\"")),
            Ok(args(1, "{}")),
            Ok(args(0, ":1}")),
            Ok(end(1, "{}")),
            Ok(end(0, "{\"a\":1}")),
            Ok(usage()),
            Ok(ModelEvent::Finish {
                reason: FinishReason::ToolCalls,
            }),
        ],
        vec![
            Ok(ModelEvent::TextDelta("partial".into())),
            Err(err.clone()),
        ],
        vec![Err(err)],
    ];
    for case in cases {
        assert_eq!(check(case.clone()), Ok(()), "{case:?}");
    }
}

#[test]
fn violations_are_named() {
    let cases: Vec<(Vec<Result<ModelEvent, ModelError>>, &str)> = vec![
        (
            vec![Ok(ModelEvent::TextDelta(String::new())), Ok(finish())],
            "empty delta",
        ),
        (vec![Ok(end(0, "")), Ok(finish())], "never started"),
        (
            vec![Ok(start(0)), Ok(end(0, "")), Ok(end(0, "")), Ok(finish())],
            "second ToolCallEnd",
        ),
        (
            vec![Ok(finish()), Ok(ModelEvent::TextDelta("late".into()))],
            "after the terminal",
        ),
        (
            vec![Ok(usage()), Ok(usage()), Ok(finish())],
            "Usage must come immediately before Finish",
        ),
        (
            vec![
                Ok(usage()),
                Ok(ModelEvent::TextDelta("x".into())),
                Ok(finish()),
            ],
            "immediately before Finish",
        ),
        (vec![Ok(start(1)), Ok(finish())], "index 1 where 0"),
        (
            vec![
                Ok(start(0)),
                Ok(args(0, "ab")),
                Ok(end(0, "abc")),
                Ok(finish()),
            ],
            "differ",
        ),
        (vec![Ok(start(0)), Ok(finish())], "no ToolCallEnd"),
        (
            vec![Ok(ModelEvent::TextDelta("x".into()))],
            "without Finish",
        ),
        (
            vec![Ok(start(0)), Ok(args(0, "")), Ok(end(0, "")), Ok(finish())],
            "empty argument",
        ),
    ];
    for (case, needle) in cases {
        let rule = check(case.clone()).expect_err(needle);
        assert!(rule.contains(needle), "{case:?}: {rule}");
    }
}

#[test]
fn a_violation_names_its_rule_as_a_value() {
    use dsh_llm::{ContractRule, ContractViolation};
    let mut checker = StreamChecker::new();
    assert_eq!(
        checker.observe(&Ok(ModelEvent::TextDelta("a".into()))),
        Ok(())
    );
    assert_eq!(
        checker.observe(&Ok(start(1))),
        Err(ContractViolation {
            position: 1,
            rule: ContractRule::StartOutOfOrder {
                index: 1,
                expected: 0
            },
        })
    );
}
