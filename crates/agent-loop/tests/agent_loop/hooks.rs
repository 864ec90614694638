//! The user's hooks at the tool seam, with a hooks service on the loop's scope: a refusal, a
//! rewritten input, an `ask` in allow mode, and what a `PostToolUse` hook adds to a result.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_hooks::{
    EventFields, FixedHooks, HookEvent, HookInput, HookSource, HookVerdict, Hooks,
    PermissionDecision,
};
use dsh_kernel::CancellationToken;
use serde_json::json;

use crate::support::*;

/// Refuses `{"bad": …}`, rewrites `{"rewrite": …}` to `{"x": 2}`, asks about `{"ask": …}`,
/// and after every call adds a line of context.
struct Scripted;

#[async_trait]
impl Hooks for Scripted {
    fn wants(&self, event: HookEvent, subjects: &[&str]) -> bool {
        matches!(event, HookEvent::PreToolUse | HookEvent::PostToolUse)
            && subjects.contains(&"echo")
    }

    async fn run(&self, input: HookInput, _cancel: CancellationToken) -> HookVerdict {
        match input.fields {
            EventFields::PreToolUse { arguments, .. } if arguments.get("bad").is_some() => {
                HookVerdict {
                    block: Some("echo of bad things is not allowed".into()),
                    ..HookVerdict::default()
                }
            }
            EventFields::PreToolUse { arguments, .. } if arguments.get("rewrite").is_some() => {
                HookVerdict {
                    updated_input: Some(json!({"x": 2})),
                    ..HookVerdict::default()
                }
            }
            EventFields::PreToolUse { arguments, .. } if arguments.get("ask").is_some() => {
                HookVerdict {
                    permission: Some((PermissionDecision::Ask, None)),
                    ..HookVerdict::default()
                }
            }
            EventFields::PostToolUse { .. } => HookVerdict {
                context: vec!["checked by a hook".into()],
                ..HookVerdict::default()
            },
            _ => HookVerdict::default(),
        }
    }
}

#[tokio::test]
async fn pre_tool_use_refuses_or_rewrites_and_post_tool_use_adds_its_context() {
    let model = ScriptedModel::new(vec![
        call("c1", "echo", r#"{"bad":true}"#),
        call("c2", "echo", r#"{"rewrite":true}"#),
        call("c3", "echo", r#"{"ask":true}"#),
        say("done"),
    ]);
    let h = Harness::new(model.clone()).await;
    h.runtime
        .scope()
        .provide::<dyn HookSource>(Arc::new(FixedHooks(Arc::new(Scripted))) as Arc<dyn HookSource>)
        .unwrap();
    h.add_tool(Probe::new("echo"));
    // No one to ask: the hook's `ask` cannot be answered, so that call does not run.
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let events = agent.session().events();
    validate_log(&events);
    let results = results(&events);
    let refused = results[0]["content"].as_str().unwrap();
    assert!(
        refused
            .contains("A hook of the user's refused this call: echo of bad things is not allowed"),
        "{refused}"
    );
    assert_eq!(results[0]["is_error"], true);
    let rewritten = results[1]["content"].as_str().unwrap();
    assert!(rewritten.starts_with(r#"{"x":2}"#), "{rewritten}");
    assert!(
        rewritten.ends_with("[hook context: checked by a hook]"),
        "{rewritten}"
    );
    let asked = results[2]["content"].as_str().unwrap();
    assert!(asked.contains("has no one to ask"), "{asked}");
    handle.dispose().await;
}

/// Adds context to every prompt, and blocks the first stop of a turn.
struct Turnwise;

#[async_trait]
impl Hooks for Turnwise {
    fn wants(&self, event: HookEvent, _subjects: &[&str]) -> bool {
        matches!(event, HookEvent::UserPromptSubmit | HookEvent::Stop)
    }

    async fn run(&self, input: HookInput, _cancel: CancellationToken) -> HookVerdict {
        match input.fields {
            EventFields::UserPromptSubmit { prompt } => HookVerdict {
                context: vec![format!("the prompt was {} bytes", prompt.len())],
                ..HookVerdict::default()
            },
            EventFields::Stop {
                stop_hook_active: false,
            } => HookVerdict {
                block: Some("run the tests before you stop".into()),
                ..HookVerdict::default()
            },
            _ => HookVerdict::default(),
        }
    }
}

/// Blocks every stop.
struct Stubborn;

#[async_trait]
impl Hooks for Stubborn {
    fn wants(&self, event: HookEvent, _subjects: &[&str]) -> bool {
        event == HookEvent::Stop
    }

    async fn run(&self, _input: HookInput, _cancel: CancellationToken) -> HookVerdict {
        HookVerdict {
            block: Some("not yet".into()),
            ..HookVerdict::default()
        }
    }
}

#[tokio::test]
async fn prompt_context_reaches_the_model_and_a_stop_hook_keeps_the_turn_going_once() {
    let model = ScriptedModel::new(vec![say("first answer"), say("tests pass")]);
    let h = Harness::new(model.clone()).await;
    h.runtime
        .scope()
        .provide::<dyn HookSource>(Arc::new(FixedHooks(Arc::new(Turnwise))) as Arc<dyn HookSource>)
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("hello")).unwrap().await, completed(1));
    validate_log(&agent.session().events());
    let first = format!("{:?}", model.request(0).messages);
    assert!(first.contains("the prompt was 5 bytes"), "{first}");
    let second = format!("{:?}", model.request(1).messages);
    assert!(second.contains("run the tests before you stop"), "{second}");
    assert_eq!(model.calls(), 2);
    handle.dispose().await;
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_keeps_a_turn_going_three_times_at_most() {
    let model = ScriptedModel::new(vec![say("a"), say("b"), say("c"), say("d"), say("e")]);
    let h = Harness::new(model.clone()).await;
    h.runtime
        .scope()
        .provide::<dyn HookSource>(Arc::new(FixedHooks(Arc::new(Stubborn))) as Arc<dyn HookSource>)
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    assert_eq!(model.calls(), 4, "the first answer and three more");
    handle.dispose().await;
}
