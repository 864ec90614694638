//! The duty to answer one request, exactly once.
//!
//! A handler holds its request's [`Reply`] and consumes it by answering, or hands the `Reply`
//! itself to whatever will answer later (a prompt held behind a load, a prompt's turn). A `Reply` dropped
//! unanswered — a handler that returned early by mistake, or one unwinding from a panic —
//! answers `-32603` on its way out, so a client is never left waiting for a response.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::rpc::{RpcError, error_frame, raw_result_frame, result_frame};
use crate::transport::FrameSender;

/// A result of the schema's type as the JSON a reply carries.
pub(crate) fn result<T: serde::Serialize>(response: &T) -> Result<Value, RpcError> {
    serde_json::to_value(response).map_err(|e| {
        tracing::error!("a response did not serialize: {e}");
        RpcError::internal_failure()
    })
}

/// One request's pending response.
pub(crate) struct Reply {
    out: FrameSender,
    id: Option<Value>,
}

impl Reply {
    /// The duty to answer the request `id` on `out`.
    pub(crate) fn new(out: FrameSender, id: Value) -> Reply {
        Reply { out, id: Some(id) }
    }

    /// The request's id.
    pub(crate) fn id(&self) -> &Value {
        self.id.as_ref().unwrap_or(&Value::Null)
    }

    /// Answers now, without waiting (the frame keeps its place before any later flush).
    pub(crate) fn send(mut self, outcome: Result<Value, RpcError>) {
        if let Some(id) = self.id.take() {
            self.out.send_now(frame(&id, outcome));
        }
    }

    /// Answers in queue order, waiting while the queue is full: for a task whose response
    /// must precede frames queued after it (a load's, before the frames that waited for it).
    pub(crate) async fn answer(mut self, outcome: Result<Value, RpcError>) {
        if let Some(id) = self.id.take() {
            self.out.send(frame(&id, outcome)).await;
        }
    }

    /// [`Reply::answer`] with a result that is JSON text already.
    pub(crate) async fn answer_text(mut self, outcome: Result<Box<RawValue>, RpcError>) {
        if let Some(id) = self.id.take() {
            let frame = match outcome {
                Ok(result) => raw_result_frame(&id, &result),
                Err(error) => error_frame(&id, &error),
            };
            self.out.send(frame).await;
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            tracing::error!(%id, "a request's handler ended without answering; answered as an internal error");
            self.out
                .send_now(error_frame(&id, &RpcError::internal_failure()));
        }
    }
}

fn frame(id: &Value, outcome: Result<Value, RpcError>) -> String {
    match outcome {
        Ok(result) => result_frame(id, result),
        Err(error) => error_frame(id, &error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio_util::sync::CancellationToken;

    async fn lines_of(f: impl FnOnce(FrameSender)) -> Vec<Value> {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (out, writing) = crate::transport::writer(ours, CancellationToken::new());
        let writer = tokio::spawn(writing);
        f(out);
        writer.await.unwrap();
        let mut lines = BufReader::new(theirs).lines();
        let mut frames = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            frames.push(serde_json::from_str(&line).unwrap());
        }
        frames
    }

    #[tokio::test]
    async fn a_reply_answers_once_and_a_dropped_one_answers_an_internal_error() {
        let frames = lines_of(|out| {
            Reply::new(out.clone(), json!(1)).send(Ok(json!({})));
            drop(Reply::new(out.clone(), json!("two")));
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _reply = Reply::new(out.clone(), json!(4));
                panic!("a handler bug");
            }));
            assert!(panicked.is_err());
        })
        .await;
        assert_eq!(frames.len(), 3, "{frames:?}");
        assert_eq!(frames[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert_eq!(frames[1]["id"], "two");
        assert_eq!(frames[1]["error"]["code"], -32603);
        assert_eq!(frames[2]["id"], 4);
        assert_eq!(frames[2]["error"]["code"], -32603);
    }
}
