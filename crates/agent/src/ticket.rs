//! Turn tickets: the awaitable outcome of one accepted message.

use std::future::IntoFuture;

use dsh_session::{CancelCause, Failure, TurnEndReason};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use crate::message::MessageId;

/// How an accepted message ended up.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnOutcome {
    /// The message entered `turn`, which ended with `reason`.
    Ended {
        /// The turn.
        turn: u32,
        /// Why it ended.
        reason: TurnEndReason,
    },
    /// An effective cancel removed the message before any turn claimed it.
    Discarded {
        /// Who cancelled.
        cause: CancelCause,
    },
    /// The message was claimed but no turn could be recorded for it.
    Failed {
        /// What went wrong.
        failure: Failure,
    },
}

/// The outcome of one accepted message; resolves exactly once. Dropping it changes nothing.
#[derive(Debug)]
pub struct TurnTicket {
    message_id: MessageId,
    receiver: oneshot::Receiver<TurnOutcome>,
}

/// The provider's side of a ticket. Dropping it unresolved resolves the ticket `Failed` with
/// code `internal`, so a caller never waits on an agent that went away.
#[derive(Debug)]
pub struct TicketSender {
    sender: Option<oneshot::Sender<TurnOutcome>>,
}

impl TurnTicket {
    /// A connected sender and ticket for `message_id` (for providers).
    pub fn channel(message_id: MessageId) -> (TicketSender, TurnTicket) {
        let (sender, receiver) = oneshot::channel();
        (
            TicketSender {
                sender: Some(sender),
            },
            TurnTicket {
                message_id,
                receiver,
            },
        )
    }

    /// The message this ticket is for.
    pub fn message_id(&self) -> &MessageId {
        &self.message_id
    }

    /// Waits for the outcome.
    pub fn outcome(self) -> BoxFuture<'static, TurnOutcome> {
        Box::pin(async move { self.receiver.await.unwrap_or_else(|_| dropped()) })
    }
}

impl IntoFuture for TurnTicket {
    type Output = TurnOutcome;
    type IntoFuture = BoxFuture<'static, TurnOutcome>;

    fn into_future(self) -> Self::IntoFuture {
        self.outcome()
    }
}

impl TicketSender {
    /// Resolves the ticket. Resolving a ticket nobody awaits is fine.
    pub fn resolve(mut self, outcome: TurnOutcome) {
        if let Some(sender) = self.sender.take() {
            let _ = sender.send(outcome);
        }
    }
}

impl Drop for TicketSender {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take() {
            let _ = sender.send(dropped());
        }
    }
}

fn dropped() -> TurnOutcome {
    TurnOutcome::Failed {
        failure: Failure {
            code: "internal".into(),
            message: "the agent dropped this message without an outcome".into(),
            status: None,
            request_id: None,
        },
    }
}
