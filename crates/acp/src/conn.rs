//! The connection: its state, and the dispatch of every classified frame.
//!
//! The reader task calls [`Conn::dispatch_all`] and never waits on handler work: prompts and
//! cancels are settled synchronously (`Agent::send` and `Agent::cancel` do not block), and
//! creations and loads run on tasks of the bridge's scope. Frames naming a session whose
//! load is still running wait behind that load, so one session's frames keep their order.

use std::collections::HashMap;
use std::sync::Arc;

use dsh_agent::AgentRegistry;
use dsh_kernel::Scope;
use dsh_session::{SessionPersistence, SessionStore};
use dsh_tools::ToolRegistry;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::AcpConfig;
use crate::envelope::Incoming;
use crate::outgoing::OutgoingTable;
use crate::record::Record;
use crate::reply::Reply;
use crate::rpc::{RpcError, code, error_frame, result_frame};
use crate::transport::FrameSender;

/// The services the bridge uses, resolved once.
pub(crate) struct Services {
    pub registry: Arc<dyn AgentRegistry>,
    pub store: Arc<SessionStore>,
    pub persistence: Arc<dyn SessionPersistence>,
    pub tools: Arc<dyn ToolRegistry>,
}

#[derive(Default)]
pub(crate) struct State {
    /// A successful `initialize` was answered.
    pub initialized: bool,
    /// The client asked for Zed's terminal cards (`_meta.terminal_output: true`).
    pub terminal_output: bool,
    /// Teardown began: nothing new is created.
    pub closed: bool,
    /// Live sessions by id.
    pub sessions: HashMap<String, Arc<Record>>,
    /// Ids whose `session/load` is running, with the frames waiting for it.
    pub loading: HashMap<String, Vec<Incoming>>,
}

/// One client connection.
pub(crate) struct Conn {
    pub config: AcpConfig,
    pub services: Services,
    pub out: FrameSender,
    /// The bridge's own scope: every task it spawns, and the owner of its agents.
    pub scope: Scope,
    pub state: Mutex<State>,
    pub outgoing: Arc<OutgoingTable>,
    /// Creations and loads in flight; teardown waits for them.
    pub setups: TaskTracker,
    /// Fires when teardown begins.
    pub closing: CancellationToken,
}

impl Conn {
    /// Handles the frames of one read, in order. A prompt that a later frame of the same
    /// read cancels never reaches its agent: the agent loop runs on other threads and could
    /// call the model before the reader gets to the cancel.
    pub(crate) fn dispatch_all(self: &Arc<Conn>, frames: Vec<Incoming>) {
        let doomed = cancelled_ahead(&frames);
        for (frame, doomed) in frames.into_iter().zip(doomed) {
            self.dispatch_one(frame, doomed);
        }
    }

    fn dispatch_one(self: &Arc<Conn>, incoming: Incoming, cancelled_ahead: bool) {
        match incoming {
            Incoming::Refuse { id, error } => self.reply(id, Err(error)),
            Incoming::Response { id, outcome } => self.outgoing.answer(&id, outcome),
            Incoming::Notification { method, params } => self.notification(&method, params),
            Incoming::Request { id, method, params } => {
                self.request(id, &method, params, cancelled_ahead);
            }
        }
    }

    /// Writes a response from a synchronous path without blocking it.
    pub(crate) fn reply(self: &Arc<Conn>, id: Value, outcome: Result<Value, RpcError>) {
        let frame = match outcome {
            Ok(result) => result_frame(&id, result),
            Err(error) => error_frame(&id, &error),
        };
        // Queued at once, so it keeps its place before a later flush-and-close; the reader
        // never waits on a full queue (a task takes the frame then).
        self.out.send_now(frame);
    }

    fn request(self: &Arc<Conn>, id: Value, method: &str, params: Value, cancelled_ahead: bool) {
        tracing::debug!(%method, %id, "request");
        let reply = Reply::new(self.out.clone(), id);
        let initialized = self.state.lock().initialized;
        if method != "initialize" && !initialized {
            return reply.send(Err(RpcError::new(
                code::INVALID_REQUEST,
                "initialize must be called first",
            )));
        }
        contained(method, || match method {
            "initialize" => {
                let answer = crate::handlers::initialize(self, &params);
                reply.send(answer);
            }
            "authenticate" => reply.send(Ok(json!({}))),
            "session/new" => crate::handlers::new_session(self, reply, params),
            "session/load" => crate::handlers::load_session(self, reply, params),
            "session/prompt" => {
                let waits = self.defer_if_loading(&params, || Incoming::Request {
                    id: reply.id().clone(),
                    method: method.to_owned(),
                    params: params.clone(),
                });
                if waits {
                    // The deferred frame carries the id; it is answered when served.
                    reply.hand_over();
                } else {
                    crate::handlers::prompt(self, reply, params, cancelled_ahead);
                }
            }
            other => reply.send(Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                "Method not found",
            )
            .with_data(json!({ "method": other })))),
        });
    }

    fn notification(self: &Arc<Conn>, method: &str, params: Option<Value>) {
        tracing::debug!(%method, "notification");
        if !self.state.lock().initialized {
            return;
        }
        let Some(params) = params else { return };
        match method {
            "session/cancel" => {
                let waits = self.defer_if_loading(&params, || Incoming::Notification {
                    method: method.to_owned(),
                    params: Some(params.clone()),
                });
                if !waits {
                    contained(method, || crate::handlers::cancel(self, &params));
                }
            }
            "$/cancel_request" => contained(method, || {
                crate::handlers::cancel_request(self, &params);
            }),
            _ => {}
        }
    }

    /// Serves, in order, frames that waited for their session's load (it has answered).
    pub(crate) fn dispatch_deferred(self: &Arc<Conn>, frames: Vec<Incoming>) {
        let doomed = cancelled_ahead(&frames);
        for (frame, doomed) in frames.into_iter().zip(doomed) {
            match frame {
                Incoming::Request { id, method, params } if method == "session/prompt" => {
                    let reply = Reply::new(self.out.clone(), id);
                    contained(&method, || {
                        crate::handlers::prompt(self, reply, params, doomed);
                    });
                }
                Incoming::Notification {
                    method,
                    params: Some(params),
                } if method == "session/cancel" => {
                    contained(&method, || crate::handlers::cancel(self, &params));
                }
                other => self.dispatch_one(other, doomed),
            }
        }
    }

    /// Holds a frame back when it names a session whose load is running; true if it did.
    fn defer_if_loading(&self, params: &Value, frame: impl FnOnce() -> Incoming) -> bool {
        let Some(id) = params.get("sessionId").and_then(Value::as_str) else {
            return false;
        };
        match self.state.lock().loading.get_mut(id) {
            Some(backlog) => {
                backlog.push(frame());
                true
            }
            None => false,
        }
    }

    /// The live record of `session_id`, if this connection has one.
    pub(crate) fn record(&self, session_id: &str) -> Option<Arc<Record>> {
        self.state.lock().sessions.get(session_id).cloned()
    }
}

/// Runs a handler so that its panic costs only its own request (answered by its dropped
/// [`Reply`]) and never the connection.
fn contained(method: &str, handler: impl FnOnce()) {
    if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(handler)) {
        let panic = dsh_kernel::panic_message(payload.as_ref());
        tracing::error!(%method, %panic, "a request handler panicked");
    }
}

/// For each frame: is it a `session/prompt` that a later frame of the list cancels (a
/// `session/cancel` of its session, or a `$/cancel_request` with its id)?
fn cancelled_ahead(frames: &[Incoming]) -> Vec<bool> {
    frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let Incoming::Request { id, method, params } = frame else {
                return false;
            };
            if method != "session/prompt" {
                return false;
            }
            let session = params.get("sessionId");
            frames[i + 1..].iter().any(|later| match later {
                Incoming::Notification {
                    method,
                    params: Some(p),
                } if method == "session/cancel" => {
                    session.is_some() && p.get("sessionId") == session
                }
                Incoming::Notification {
                    method,
                    params: Some(p),
                } if method == "$/cancel_request" => p.get("requestId") == Some(id),
                _ => false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::classify;

    fn frames(lines: &[Value]) -> Vec<Incoming> {
        lines
            .iter()
            .map(|l| classify(l.to_string().as_bytes()))
            .collect()
    }

    fn prompt(id: Value, session: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": []}})
    }

    #[test]
    fn a_prompt_is_doomed_only_by_a_later_cancel_of_its_own_session_or_id() {
        let cancel = |s: &str| json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": s}});
        let by_id = |id: Value| json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}});
        let read = frames(&[
            cancel("a"),
            prompt(json!(1), "a"),
            prompt(json!(2), "b"),
            prompt(json!("3"), "c"),
            cancel("a"),
            by_id(json!(3)),
        ]);
        assert_eq!(
            cancelled_ahead(&read),
            [false, true, false, false, false, false],
            "a cancel before the prompt, another session's and a look-alike id do not count"
        );
        let read = frames(&[prompt(json!("3"), "c"), by_id(json!("3"))]);
        assert_eq!(cancelled_ahead(&read), [true, false]);
    }
}
