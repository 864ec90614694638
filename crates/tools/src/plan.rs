//! The session's plan: a short list of steps with their status, which a tool (the `todo`
//! tool) replaces whole and the front ends show as it changes.
//!
//! A tool hands its plan to the agent loop in its output's `meta` under [`PLAN_META_KEY`]
//! ([`ToolOutput::with_plan`]); the loop records it as the session's `plan/updated` event.

use serde::{Deserialize, Serialize};

use crate::ToolOutput;

/// The key of a tool output's `meta` that carries a plan.
pub const PLAN_META_KEY: &str = "plan";

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on (at most one step at a time).
    InProgress,
    /// Done.
    Completed,
}

impl PlanStatus {
    /// The status's name, as the model and the log spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Completed => "completed",
        }
    }
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    /// What the step is, in a line.
    pub content: String,
    /// Where it stands.
    pub status: PlanStatus,
}

/// A whole plan, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps.
    pub entries: Vec<PlanEntry>,
}

impl Plan {
    /// The plan a tool output carries, when it carries a readable one.
    pub fn of(output_meta: Option<&serde_json::Value>) -> Option<Plan> {
        let value = output_meta?.get(PLAN_META_KEY)?;
        serde_json::from_value(value.clone()).ok()
    }
}

impl ToolOutput {
    /// This output, carrying `plan` for the loop to record as the session's plan.
    pub fn with_plan(mut self, plan: &Plan) -> ToolOutput {
        let mut meta = match self.meta.take() {
            Some(serde_json::Value::Object(map)) => map,
            Some(_) | None => serde_json::Map::new(),
        };
        meta.insert(
            PLAN_META_KEY.to_owned(),
            serde_json::to_value(plan).unwrap_or_default(),
        );
        self.meta = Some(serde_json::Value::Object(meta));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_rides_in_the_output_meta_and_reads_back() {
        let plan = Plan {
            entries: vec![
                PlanEntry {
                    content: "read".into(),
                    status: PlanStatus::Completed,
                },
                PlanEntry {
                    content: "fix".into(),
                    status: PlanStatus::InProgress,
                },
            ],
        };
        let output = ToolOutput::text("ok").with_plan(&plan);
        assert_eq!(Plan::of(output.meta.as_ref()), Some(plan));
        assert_eq!(Plan::of(None), None);
        assert_eq!(Plan::of(Some(&serde_json::json!({"plan": 3}))), None);
    }
}
