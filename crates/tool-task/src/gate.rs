//! The gate a child asks through: its parent's, with every question naming the child, so
//! the person answering knows a subagent asks and which one.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_tools::{ApprovalDecision, ApprovalGate, ApprovalRequest, PermissionMode};

/// The parent's gate, labelled with the child's task.
pub struct ChildGate {
    parent: Arc<dyn ApprovalGate>,
    label: String,
}

impl ChildGate {
    /// `parent`'s gate for the child doing `label` (safe text).
    pub fn new(parent: Arc<dyn ApprovalGate>, label: String) -> ChildGate {
        ChildGate { parent, label }
    }
}

#[async_trait]
impl ApprovalGate for ChildGate {
    /// The parent's mode, read at each call: a mode the person changes holds for the
    /// children too, and a child is never in a wider one.
    fn mode(&self) -> PermissionMode {
        self.parent.mode()
    }

    async fn decide(&self, mut request: ApprovalRequest) -> ApprovalDecision {
        // A grandchild's question keeps the label nearest the person: its own.
        if request.subagent.is_none() {
            request.subagent = Some(self.label.clone());
        }
        self.parent.decide(request).await
    }
}
