//! The approval gate of an interactive session: a gated call becomes a question in the
//! terminal. "Always" answers become allow rules the loop remembers for the project, so a
//! call one covers is not asked about again (the loop does not ask the gate).
//!
//! It fails closed: a terminal that went away (the question's answer dropped) rejects the
//! call. Only the turn's own cancellation yields `Cancelled`.

use async_trait::async_trait;
use dsh_tools::{ApprovalDecision, ApprovalGate, ApprovalRequest, Effect, Grant, PermissionMode};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

/// A call waiting for the user's answer.
#[derive(Debug)]
pub struct Question {
    /// The call as the gate was asked about it.
    pub request: Box<ApprovalRequest>,
    /// What "always" would allow from now on in this project; `None` when it is not offered
    /// (leaving the sandbox is asked about every time).
    pub grant: Option<Grant>,
    reply: oneshot::Sender<Answer>,
}

impl Question {
    /// A question about `request`, answered through the receiver it also returns.
    pub fn new(request: ApprovalRequest) -> (Question, oneshot::Receiver<Answer>) {
        let grant = match request.effect {
            Effect::Escalate => None,
            Effect::Read
            | Effect::ReadOutside
            | Effect::Edit
            | Effect::EditOutside
            | Effect::Execute
            | Effect::Confined
            | Effect::Unconfined => Some(Grant::for_call(&request.tool, &request.arguments)),
        };
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
    /// Yes, and to every call the question's grant covers, in this project from now on.
    Always,
    /// No, with the user's reason (empty when they gave none).
    No(String),
}

/// The gate: it sends questions to the terminal's loop.
pub struct Gate {
    mode: Mutex<PermissionMode>,
    questions: mpsc::UnboundedSender<Question>,
    /// One question at a time, in the model's order.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl Gate {
    /// A gate in `mode` that asks through `questions`.
    pub fn new(mode: PermissionMode, questions: mpsc::UnboundedSender<Question>) -> Gate {
        Gate {
            mode: Mutex::new(mode),
            questions,
            one_at_a_time: tokio::sync::Mutex::default(),
        }
    }

    /// Switches the mode (`/mode`): from the next gated call on.
    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.lock() = mode;
    }
}

#[async_trait]
impl ApprovalGate for Gate {
    fn mode(&self) -> PermissionMode {
        *self.mode.lock()
    }

    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let _turn = self.one_at_a_time.lock().await;
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
                Ok(Answer::Always) => match grant {
                    Some(grant) => ApprovalDecision::AllowAlways { rule: grant.rule() },
                    None => ApprovalDecision::Allow,
                },
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
        shown: Some(dsh_tools::ToolCallView::Terminal {
            command: command.into(),
            description: None,
            cwd: None,
            raw_input: serde_json::json!({"command": command}),
        }),
        cancel,
        subagent: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_kernel::CancellationToken;

    #[tokio::test]
    async fn always_answers_with_the_rule_of_the_program_and_subcommand() {
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
        let grant = question.grant.clone().unwrap();
        assert_eq!(grant.describe(), "bash commands starting with `git commit`");
        question.answer(Answer::Always);
        assert_eq!(
            asking.await.unwrap(),
            ApprovalDecision::AllowAlways {
                rule: "bash(git commit:*)".into()
            }
        );
        // Leaving the sandbox offers no "always": the answer allows this call alone.
        let mut leaving = bash("curl example.org", CancellationToken::new());
        leaving.effect = Effect::Escalate;
        let asking = tokio::spawn({
            let gate = gate.clone();
            async move { gate.decide(leaving).await }
        });
        let question = rx.recv().await.unwrap();
        assert!(question.grant.is_none());
        question.answer(Answer::Always);
        assert_eq!(asking.await.unwrap(), ApprovalDecision::Allow);
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
