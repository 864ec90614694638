//! The approval gate of an interactive session: a gated call becomes a question in the
//! terminal, unless a grant the user gave with "always" covers it.
//!
//! It fails closed: a terminal that went away (the question's answer dropped) rejects the
//! call. Only the turn's own cancellation yields `Cancelled`.

use async_trait::async_trait;
use dsh_tools::{ApprovalDecision, ApprovalGate, ApprovalRequest, PermissionMode, ToolCallView};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::grant::Grant;

/// A call waiting for the user's answer.
#[derive(Debug)]
pub struct Question {
    /// The call as the gate was asked about it.
    pub request: Box<ApprovalRequest>,
    /// What "always" would allow from now on in this session.
    pub grant: Grant,
    reply: oneshot::Sender<Answer>,
}

impl Question {
    /// A question about `request`, answered through the receiver it also returns.
    pub fn new(request: ApprovalRequest) -> (Question, oneshot::Receiver<Answer>) {
        let grant = Grant::for_call(&request.tool, request.shown.as_ref());
        let (reply, answered) = oneshot::channel();
        let question = Question {
            request: Box::new(request),
            grant,
            reply,
        };
        (question, answered)
    }

    /// Gives the user's answer (a question whose turn was cancelled takes none).
    pub fn answer(self, answer: Answer) {
        let _ = self.reply.send(answer);
    }
}

/// What the user answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Yes, this once.
    Once,
    /// Yes, and to every call the question's grant covers, for the rest of the session.
    Always,
    /// No, with the user's reason (empty when they gave none).
    No(String),
}

/// The gate: it sends questions to the terminal's loop and keeps the session's grants.
pub struct Gate {
    mode: Mutex<PermissionMode>,
    grants: Mutex<Vec<Grant>>,
    questions: mpsc::UnboundedSender<Question>,
    /// One question at a time, in the model's order.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Gate {
    /// A gate in `mode` that asks through `questions`.
    pub fn new(mode: PermissionMode, questions: mpsc::UnboundedSender<Question>) -> Gate {
        Gate {
            mode: Mutex::new(mode),
            grants: Mutex::default(),
            questions,
            one_at_a_time: tokio::sync::Mutex::default(),
        }
    }

    /// Switches the mode (`/mode`): from the next gated call on.
    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.lock() = mode;
    }

    /// Whether a grant given earlier covers this call.
    fn granted(&self, tool: &str, shown: Option<&ToolCallView>) -> bool {
        self.grants.lock().iter().any(|g| g.covers(tool, shown))
    }
}

#[async_trait]
impl ApprovalGate for Gate {
    fn mode(&self) -> PermissionMode {
        *self.mode.lock()
    }

    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let _turn = self.one_at_a_time.lock().await;
        // Leaving the sandbox is asked about every time: no earlier "always" covers it.
        if !request.effect.needs_a_person() && self.granted(&request.tool, request.shown.as_ref()) {
            return ApprovalDecision::Allow;
        }
        let cancel = request.cancel.clone();
        let (question, answered) = Question::new(request);
        let grant = question.grant.clone();
        if self.questions.send(question).is_err() {
            return gone();
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => ApprovalDecision::Cancelled,
            answer = answered => match answer {
                Ok(Answer::Once) => ApprovalDecision::Allow,
                Ok(Answer::Always) => {
                    self.grants.lock().push(grant);
                    ApprovalDecision::Allow
                }
                Ok(Answer::No(reason)) => ApprovalDecision::Reject {
                    reason: match reason.trim() {
                        "" => "the user answered no in the terminal".to_owned(),
                        reason => format!("the user answered no in the terminal: {reason}"),
                    },
                },
                Err(_) => gone(),
            },
        }
    }
}

fn gone() -> ApprovalDecision {
    ApprovalDecision::Reject {
        reason: "the terminal that would ask the user went away, so it was refused".into(),
    }
}

/// A bash call as the gate is asked about it (for tests).
#[cfg(test)]
pub(crate) fn bash(command: &str, cancel: dsh_kernel::CancellationToken) -> ApprovalRequest {
    ApprovalRequest {
        session_id: dsh_session::SessionId::mint(),
        turn: 1,
        step: 1,
        call_id: "c".into(),
        tool: "bash".into(),
        arguments: serde_json::json!({"command": command}),
        effect: dsh_tools::Effect::Execute,
        preview: None,
        shown: Some(ToolCallView::Terminal {
            command: command.into(),
            description: None,
            cwd: None,
            raw_input: serde_json::json!({"command": command}),
        }),
        cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::CancellationToken;

    #[tokio::test]
    async fn always_lets_the_same_program_and_subcommand_pass_unasked() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let gate = std::sync::Arc::new(Gate::new(PermissionMode::Ask, tx));
        let asking = tokio::spawn({
            let gate = gate.clone();
            async move {
                gate.decide(bash("git commit -m one", CancellationToken::new()))
                    .await
            }
        });
        let question = rx.recv().await.unwrap();
        assert_eq!(
            question.grant.describe(),
            "bash commands starting with `git commit`"
        );
        question.answer(Answer::Always);
        assert_eq!(asking.await.unwrap(), ApprovalDecision::Allow);
        let again = gate
            .decide(bash("git commit -m two", CancellationToken::new()))
            .await;
        assert_eq!(again, ApprovalDecision::Allow);
        assert!(rx.try_recv().is_err(), "no second question");
        // Another subcommand, or a command chained after it, is asked about.
        for other in ["git push", "git commit -m x && rm -rf ~"] {
            let cancel = CancellationToken::new();
            let asking = tokio::spawn({
                let gate = gate.clone();
                let cancel = cancel.clone();
                async move { gate.decide(bash(other, cancel)).await }
            });
            let question = rx.recv().await.unwrap();
            assert_eq!(question.request.arguments["command"], other);
            cancel.cancel();
            assert_eq!(asking.await.unwrap(), ApprovalDecision::Cancelled);
        }
    }

    #[tokio::test]
    async fn no_carries_the_reason_and_a_gone_terminal_refuses() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let gate = std::sync::Arc::new(Gate::new(PermissionMode::Ask, tx));
        let asking = tokio::spawn({
            let gate = gate.clone();
            async move {
                gate.decide(bash("rm -rf build", CancellationToken::new()))
                    .await
            }
        });
        rx.recv()
            .await
            .unwrap()
            .answer(Answer::No("use cargo clean".into()));
        assert_eq!(
            asking.await.unwrap(),
            ApprovalDecision::Reject {
                reason: "the user answered no in the terminal: use cargo clean".into()
            }
        );
        drop(rx);
        let refused = gate.decide(bash("ls", CancellationToken::new())).await;
        assert!(
            matches!(refused, ApprovalDecision::Reject { .. }),
            "{refused:?}"
        );
    }
}
