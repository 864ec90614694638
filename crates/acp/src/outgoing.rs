//! Requests the bridge sends the client (`session/request_permission`, `fs/read_text_file`,
//! `fs/write_text_file`), and the table that routes the client's answers back to whoever
//! waits for them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};

use agent_client_protocol_schema::v1::{CancelRequestNotification, RequestId};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::rpc::notification_frame;
use crate::transport::FrameSender;

/// The client's answer: its `result`, or its `error` object. A dropped sender means the
/// connection closed first.
pub(crate) type Answer = oneshot::Receiver<Result<Value, Value>>;

/// Pending outgoing requests by id; ids count up from 0 per connection.
#[derive(Default)]
pub(crate) struct OutgoingTable {
    next: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, Value>>>>,
}

impl OutgoingTable {
    /// A fresh id and the receiver of its answer.
    pub(crate) fn register(&self) -> (i64, Answer) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, tx);
        (id, rx)
    }

    /// Routes a response; one whose id is not pending is dropped.
    pub(crate) fn answer(&self, id: &Value, outcome: Result<Value, Value>) {
        let waiting = id.as_i64().and_then(|id| self.pending.lock().remove(&id));
        match waiting {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::debug!(%id, "a response to no pending request; dropped"),
        }
    }

    /// Stops waiting for a request's answer (one that took too long).
    pub(crate) fn forget(&self, id: i64) {
        self.pending.lock().remove(&id);
    }

    /// Withdraws a question the client was sent and nobody waits for any more: its answer
    /// is forgotten, and the client is told to close the dialog.
    pub(crate) fn withdraw(&self, out: &FrameSender, id: i64) {
        self.pending.lock().remove(&id);
        let cancel = CancelRequestNotification::new(RequestId::Number(id));
        out.send_now(notification_frame("$/cancel_request", &cancel));
    }

    /// Fails every pending request: the connection is closing.
    pub(crate) fn fail_all(&self) {
        self.pending.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn answers_reach_their_request_and_strays_are_dropped() {
        let table = OutgoingTable::default();
        let (a, answer_a) = table.register();
        let (b, answer_b) = table.register();
        assert_eq!((a, b), (0, 1));
        table.answer(&json!(99), Ok(json!("stray")));
        table.answer(&json!("1"), Ok(json!("a string id is not ours")));
        table.answer(&json!(b), Err(json!({"code": 1})));
        assert_eq!(answer_b.await.unwrap(), Err(json!({"code": 1})));
        table.fail_all();
        assert!(answer_a.await.is_err(), "closing fails what is pending");
    }
}
