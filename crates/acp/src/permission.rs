//! The approval gate of one session in `ask` mode: each gated call becomes a
//! `session/request_permission` to the client, sent on the session's ordered path.
//!
//! It fails closed: a client error, an unknown option, an undecodable answer, a dismissed
//! dialog or a closed connection all reject the call. Only the turn's own cancellation
//! yields `Cancelled` (the call is then aborted, not rejected).

use std::sync::Arc;

use agent_client_protocol_schema::v1::{RequestPermissionOutcome, RequestPermissionResponse};
use async_trait::async_trait;
use dsh_tools::{ApprovalDecision, ApprovalGate, ApprovalRequest, Effect, Grant, PermissionMode};
use serde_json::Value;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::live_session::{Grants, ModeCell};
use crate::outgoing::{Answer, OutgoingTable};
use crate::path::Item;
use crate::transport::FrameSender;

/// One session's gate.
pub(crate) struct SessionGate {
    /// The mode in force, which the session's mode option changes.
    pub mode: ModeCell,
    pub queue: mpsc::UnboundedSender<Item>,
    pub grants: Arc<Grants>,
    pub outgoing: Arc<OutgoingTable>,
    pub out: FrameSender,
    /// At most one question per session is outstanding; later calls wait behind it.
    pub one_at_a_time: Mutex<()>,
}

const DECLINED: &str = "the user rejected it in the editor";
const FAILED_CLOSED: &str = "the editor gave no usable answer, so it was refused";

#[async_trait]
impl ApprovalGate for SessionGate {
    fn mode(&self) -> PermissionMode {
        *self.mode.lock()
    }

    async fn decide(&self, request: ApprovalRequest) -> ApprovalDecision {
        let _turn = self.one_at_a_time.lock().await;
        let (reply, asked) = oneshot::channel();
        let item = Item::Permission {
            session: request.session_id.clone(),
            subagent: request.subagent.clone(),
            turn: request.turn,
            step: request.step,
            call_id: request.call_id.clone(),
            preview: request.preview.clone(),
            // What "always" would allow, in words; leaving the sandbox offers no "always".
            always: (request.effect != Effect::Escalate)
                .then(|| Grant::for_call(&request.tool, &request.arguments).describe()),
            reply,
        };
        if self.queue.send(item).is_err() {
            return reject(FAILED_CLOSED);
        }
        // However this wait ends — the turn's cancel here, or the loop dropping this future
        // when it sees the cancel first — a question already on the wire is withdrawn.
        let mut asking = Asking {
            asked: Some(asked),
            gate: self,
        };
        let (id, answer) = tokio::select! {
            biased;
            () = request.cancel.cancelled() => return ApprovalDecision::Cancelled,
            asked = asking.wait() => match asked {
                Some(sent) => sent,
                // No open prompt to attach the question to.
                None => return reject(FAILED_CLOSED),
            },
        };
        drop(asking);
        // The loop may stop waiting for this future when the turn is cancelled; the guard
        // withdraws the question however the wait ends.
        let mut outstanding = Outstanding {
            id: Some(id),
            gate: self,
        };
        let decision = tokio::select! {
            biased;
            () = request.cancel.cancelled() => ApprovalDecision::Cancelled,
            answer = answer => {
                outstanding.id = None;
                self.decision(&request, answer.ok())
            }
        };
        drop(outstanding);
        decision
    }
}

/// A question handed to the session's path and not yet known to be on the wire. Dropped before
/// the path said so, it closes the channel (the path then does not ask, or withdraws what it
/// asked); if the path's answer is already in the channel, the question is on the wire and is
/// withdrawn here.
struct Asking<'a> {
    asked: Option<oneshot::Receiver<Option<(i64, Answer)>>>,
    gate: &'a SessionGate,
}

impl Asking<'_> {
    /// The question's id and answer once it is on the wire; `None` when the path did not ask.
    async fn wait(&mut self) -> Option<(i64, Answer)> {
        let asked = self.asked.as_mut()?;
        let sent = asked.await.ok().flatten();
        self.asked = None;
        sent
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        if let Some(mut asked) = self.asked.take() {
            asked.close();
            if let Ok(Some((id, _))) = asked.try_recv() {
                self.gate.outgoing.withdraw(&self.gate.out, id);
            }
        }
    }
}

/// A question the client has not answered: dropped unanswered, it is withdrawn so the
/// client closes its dialog (a notification, which needs no answer).
struct Outstanding<'a> {
    id: Option<i64>,
    gate: &'a SessionGate,
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.gate.outgoing.withdraw(&self.gate.out, id);
        }
    }
}

impl SessionGate {
    fn allowed(&self, request: &ApprovalRequest) {
        let _ = self.queue.send(Item::Allowed {
            session: request.session_id.clone(),
            turn: request.turn,
            step: request.step,
            call_id: request.call_id.clone(),
        });
    }

    fn decision(
        &self,
        request: &ApprovalRequest,
        answer: Option<Result<Value, Value>>,
    ) -> ApprovalDecision {
        let selected = match answer {
            Some(Ok(result)) => serde_json::from_value::<RequestPermissionResponse>(result).ok(),
            Some(Err(_)) | None => None,
        };
        let option = match selected.map(|r| r.outcome) {
            Some(RequestPermissionOutcome::Selected(chosen)) => chosen.option_id.0.to_string(),
            // A dismissed dialog, or an outcome newer than this schema: refused.
            Some(_) | None => return reject(FAILED_CLOSED),
        };
        match option.as_str() {
            "allow_once" => {
                self.allowed(request);
                ApprovalDecision::Allow
            }
            // Leaving the sandbox is offered no "always"; an answer that says it anyway
            // allows this call alone.
            "allow_always" if request.effect == Effect::Escalate => {
                self.allowed(request);
                ApprovalDecision::Allow
            }
            "allow_always" => {
                let rule = Grant::for_call(&request.tool, &request.arguments).rule();
                if let Ok(parsed) = dsh_tools::Rule::parse(&rule) {
                    self.grants.always.lock().push(parsed);
                }
                self.allowed(request);
                ApprovalDecision::AllowAlways { rule }
            }
            "reject_once" => reject(DECLINED),
            _ => reject(FAILED_CLOSED),
        }
    }
}

fn reject(reason: &str) -> ApprovalDecision {
    ApprovalDecision::Reject {
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests;
