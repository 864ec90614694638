//! The connection: its state, and the dispatch of every classified frame.
//!
//! The reader task calls [`Conn::dispatch`] and never waits on handler work: prompts and
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
    /// Handles one classified input frame.
    pub(crate) fn dispatch(self: &Arc<Conn>, incoming: Incoming) {
        match incoming {
            Incoming::Refuse { id, error } => self.reply(id, Err(error)),
            Incoming::Response { id, outcome } => self.outgoing.answer(&id, outcome),
            Incoming::Notification { method, params } => self.notification(&method, params),
            Incoming::Request { id, method, params } => self.request(id, &method, params),
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

    fn request(self: &Arc<Conn>, id: Value, method: &str, params: Value) {
        tracing::debug!(%method, %id, "request");
        let initialized = self.state.lock().initialized;
        if method != "initialize" && !initialized {
            return self.reply(
                id,
                Err(RpcError::new(
                    code::INVALID_REQUEST,
                    "initialize must be called first",
                )),
            );
        }
        match method {
            "initialize" => {
                let answer = crate::handlers::initialize(self, &params);
                self.reply(id, answer);
            }
            "authenticate" => self.reply(id, Ok(json!({}))),
            "session/new" => crate::handlers::new_session(self, id, params),
            "session/load" => crate::handlers::load_session(self, id, params),
            "session/prompt" => {
                let waits = self.defer_if_loading(&params, || Incoming::Request {
                    id: id.clone(),
                    method: method.to_owned(),
                    params: params.clone(),
                });
                if !waits {
                    crate::handlers::prompt(self, id, params);
                }
            }
            other => self.reply(
                id,
                Err(RpcError::new(code::METHOD_NOT_FOUND, "Method not found")
                    .with_data(json!({ "method": other }))),
            ),
        }
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
                    crate::handlers::cancel(self, &params);
                }
            }
            "$/cancel_request" => crate::handlers::cancel_request(self, &params),
            _ => {}
        }
    }

    /// Serves a frame that waited for its session's load (the load has answered).
    pub(crate) fn dispatch_deferred(self: &Arc<Conn>, incoming: Incoming) {
        match incoming {
            Incoming::Request { id, method, params } if method == "session/prompt" => {
                crate::handlers::prompt(self, id, params);
            }
            Incoming::Notification {
                method,
                params: Some(params),
            } if method == "session/cancel" => crate::handlers::cancel(self, &params),
            other => self.dispatch(other),
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
