//! The approval gate: a front end's say before a tool that needs approval runs.

use async_trait::async_trait;
use dsh_kernel::CancellationToken;
use dsh_session::SessionId;

use crate::permission::{Effect, PermissionMode};
use crate::present::{ToolCallView, ToolResultView};

/// One call awaiting a decision.
#[derive(Clone, Debug)]
pub struct ApprovalRequest {
    /// The calling agent.
    pub session_id: SessionId,
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The model's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The parsed arguments.
    pub arguments: serde_json::Value,
    /// What the call would do.
    pub effect: Effect,
    /// What it would change, when the tool can say (an edit's diff).
    pub preview: Option<ToolResultView>,
    /// How the tool presents the call (a command as a terminal), when it does.
    pub shown: Option<ToolCallView>,
    /// The turn's token: it fires when the turn is cancelled, and the gate should give up.
    pub cancel: CancellationToken,
    /// Who asks, when it is a subagent and not the agent the person talks to: its label
    /// (the few words its task was given), safe. The question names it.
    pub subagent: Option<String>,
}

/// The gate's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// Run the call.
    Allow,
    /// Run the call, and from now on every call the allow rule `rule` covers in this project
    /// (the user answered "always"; the loop records and remembers the rule).
    AllowAlways {
        /// The rule, in the configuration's pattern language (`bash(cargo test:*)`).
        rule: String,
    },
    /// Do not run it; the model is told the user declined, and why.
    Reject {
        /// The user's reason.
        reason: String,
    },
    /// The request was withdrawn (the turn was cancelled, the front end went away).
    Cancelled,
}

/// Decides whether a call may run. One request at a time per agent, in model order. The loop
/// asks only for calls whose effect the gate's mode asks for.
#[async_trait]
pub trait ApprovalGate: Send + Sync + 'static {
    /// The mode now in force (it may change between calls: an editor's mode picker).
    fn mode(&self) -> PermissionMode;

    /// The decision for `request`.
    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision;
}
