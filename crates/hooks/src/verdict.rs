//! The answers of one event's handlers, folded into one.

use serde_json::Value;

use crate::answer::{HandlerAnswer, PermissionDecision};

/// One handler's run, as the log records it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookRun {
    /// Its command.
    pub command: String,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// How long it ran, in milliseconds.
    pub elapsed_ms: u64,
    /// What it decided ([`HandlerAnswer::decision`]).
    pub decision: String,
    /// Its failure in words, for the person, when it failed.
    pub error: Option<String>,
}

/// What an event's hooks decided together.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HookVerdict {
    /// Each handler's run, in configuration order (empty when the provider keeps none).
    pub runs: Vec<HookRun>,
    /// Blocked, with every blocking handler's reason (one a line).
    pub block: Option<String>,
    /// The strictest decision on a tool call (deny beats ask beats allow), with its reason.
    pub permission: Option<(PermissionDecision, Option<String>)>,
    /// The first rewritten input, in configuration order.
    pub updated_input: Option<Value>,
    /// Context for the model, in configuration order.
    pub context: Vec<String>,
    /// Messages and errors for the person, in configuration order.
    pub messages: Vec<String>,
    /// The first request to stop the agent.
    pub stop: Option<String>,
}

impl HookVerdict {
    /// The verdict of `answers`, given in configuration order.
    pub fn fold(answers: impl IntoIterator<Item = HandlerAnswer>) -> HookVerdict {
        let mut verdict = HookVerdict::default();
        let mut blocks: Vec<String> = Vec::new();
        for answer in answers {
            blocks.extend(answer.block);
            verdict.permission = match (verdict.permission.take(), answer.permission) {
                (Some(held), Some(new)) if new.0 > held.0 => Some(new),
                (Some(held), _) => Some(held),
                (None, new) => new,
            };
            if verdict.updated_input.is_none() {
                verdict.updated_input = answer.updated_input;
            }
            verdict.context.extend(answer.context);
            verdict.messages.extend(answer.message);
            verdict.messages.extend(answer.error);
            if verdict.stop.is_none() {
                verdict.stop = answer.stop;
            }
        }
        if !blocks.is_empty() {
            verdict.block = Some(blocks.join("\n"));
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decided(decision: PermissionDecision) -> HandlerAnswer {
        HandlerAnswer {
            permission: Some((decision, Some(format!("{decision:?}")))),
            ..HandlerAnswer::default()
        }
    }

    #[test]
    fn texts_keep_configuration_order_and_the_first_rewrite_wins() {
        let verdict = HookVerdict::fold([
            HandlerAnswer {
                context: Some("one".into()),
                updated_input: Some(serde_json::json!({"a": 1})),
                ..HandlerAnswer::default()
            },
            HandlerAnswer {
                context: Some("two".into()),
                updated_input: Some(serde_json::json!({"a": 2})),
                block: Some("no".into()),
                error: Some("the hook `x` timed out".into()),
                ..HandlerAnswer::default()
            },
            HandlerAnswer {
                block: Some("never".into()),
                ..HandlerAnswer::default()
            },
        ]);
        assert_eq!(verdict.context, ["one", "two"]);
        assert_eq!(verdict.updated_input, Some(serde_json::json!({"a": 1})));
        assert_eq!(verdict.block.as_deref(), Some("no\nnever"));
        assert_eq!(verdict.messages, ["the hook `x` timed out"]);
        assert_eq!(HookVerdict::fold([]), HookVerdict::default());
    }

    proptest! {
        /// Whatever the order, the strictest decision wins.
        #[test]
        fn the_strictest_decision_wins_in_any_order(picks in proptest::collection::vec(0u8..3, 1..6)) {
            let decisions: Vec<PermissionDecision> = picks
                .iter()
                .map(|p| match p {
                    0 => PermissionDecision::Allow,
                    1 => PermissionDecision::Ask,
                    _ => PermissionDecision::Deny,
                })
                .collect();
            let strictest = decisions.iter().max().copied();
            let verdict = HookVerdict::fold(decisions.iter().map(|d| decided(*d)));
            prop_assert_eq!(verdict.permission.map(|(d, _)| d), strictest);
        }
    }
}
