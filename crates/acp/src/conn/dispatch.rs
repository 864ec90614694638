//! The dispatch of every frame the connection reads.
//!
//! The reader task calls [`Conn::dispatch_all`] and never waits on handler work: prompts and
//! cancels are settled synchronously (`Agent::send` and `Agent::cancel` do not block), and
//! creations and loads run on tasks of the bridge's scope. Each request is decoded once into
//! a [`Request`] and handed, with its [`Reply`], to the handler of its variant.

use std::sync::Arc;

use serde_json::Value;

use super::Conn;
use crate::envelope::Incoming;
use crate::reply::{Reply, result};
use crate::request::{Notification, Request};
use crate::rpc::{RpcError, code};
use crate::state::Deferred;
use agent_client_protocol_schema::v1::AuthenticateResponse;

/// One frame of a read, decoded.
enum Frame {
    Request {
        method: String,
        reply: Reply,
        request: Result<Request, RpcError>,
    },
    Notification(Notification),
    Response {
        id: Value,
        outcome: Result<Value, Value>,
    },
    Refuse {
        id: Value,
        error: RpcError,
    },
}

impl Conn {
    /// Handles the frames of one read, in order. A prompt that a later frame of the same
    /// read cancels never reaches its agent: the agent loop runs on other threads and could
    /// call the model before the reader gets to the cancel.
    pub(crate) fn dispatch_all(self: &Arc<Conn>, frames: Vec<Incoming>) {
        let frames: Vec<Frame> = frames.into_iter().map(|f| self.decode(f)).collect();
        let doomed = cancelled_ahead(&frames);
        for (frame, doomed) in frames.into_iter().zip(doomed) {
            match frame {
                Frame::Refuse { id, error } => Reply::new(self.out().clone(), id).send(Err(error)),
                Frame::Response { id, outcome } => self.outgoing().answer(&id, outcome),
                Frame::Notification(notification) => self.notification(notification),
                Frame::Request {
                    method,
                    reply,
                    request,
                } => self.request(&method, reply, request, doomed),
            }
        }
    }

    fn decode(&self, incoming: Incoming) -> Frame {
        match incoming {
            Incoming::Request { id, method, params } => Frame::Request {
                request: Request::decode(&method, &params),
                method,
                reply: Reply::new(self.out().clone(), id),
            },
            Incoming::Notification { method, params } => {
                tracing::debug!(%method, "notification");
                Frame::Notification(Notification::decode(&method, params.as_ref()))
            }
            Incoming::Response { id, outcome } => Frame::Response { id, outcome },
            Incoming::Refuse { id, error } => Frame::Refuse { id, error },
        }
    }

    fn request(
        self: &Arc<Conn>,
        method: &str,
        reply: Reply,
        request: Result<Request, RpcError>,
        cancelled_ahead: bool,
    ) {
        tracing::debug!(%method, id = %reply.id(), "request");
        if method != "initialize" && !self.state().is_initialized() {
            return reply.send(Err(RpcError::new(
                code::INVALID_REQUEST,
                "initialize must be called first",
            )));
        }
        let request = match request {
            Ok(request) => request,
            Err(error) => return reply.send(Err(error)),
        };
        contained(method, move || match request {
            Request::Initialize(caps) => {
                reply.send(crate::handlers::initialize(self, caps));
            }
            Request::Authenticate => reply.send(result(&AuthenticateResponse::new())),
            Request::NewSession(request) => crate::handlers::new_session(self, reply, *request),
            Request::LoadSession(request) => crate::handlers::load_session(self, reply, *request),
            Request::ResumeSession(request) => {
                crate::handlers::resume_session(self, reply, *request);
            }
            Request::ListSessions(request) => crate::handlers::list_sessions(self, reply, request),
            Request::SetConfigOption(request) => {
                crate::handlers::set_config_option(self, reply, request)
            }
            Request::SetMode(request) => crate::handlers::set_mode(self, reply, request),
            Request::CloseSession(request) => crate::handlers::close_session(self, reply, request),
            Request::DeleteSession(request) => {
                crate::handlers::delete_session(self, reply, request);
            }
            Request::Prompt(request) => {
                let held = Deferred {
                    reply,
                    request,
                    doomed: cancelled_ahead,
                };
                let id = held.request.session_id.0.clone();
                if let Err(now) = self.state().defer(&id, held) {
                    crate::handlers::prompt(self, now.reply, *now.request, now.doomed);
                }
            }
        });
    }

    fn notification(self: &Arc<Conn>, notification: Notification) {
        if !self.state().is_initialized() {
            return;
        }
        match notification {
            Notification::Cancel { session_id } => {
                if !self.state().cancel_deferred(&session_id) {
                    contained("session/cancel", || {
                        crate::handlers::cancel(self, &session_id);
                    });
                }
            }
            Notification::CancelRequest { request_id } => {
                if !self.state().cancel_deferred_request(&request_id) {
                    contained("$/cancel_request", || {
                        crate::handlers::cancel_request(self, &request_id);
                    });
                }
            }
            Notification::Ignored => {}
        }
    }

    /// Serves, in order, prompts that waited for their session's load (it has answered).
    pub(crate) fn dispatch_deferred(self: &Arc<Conn>, held: Vec<Deferred>) {
        for Deferred {
            reply,
            request,
            doomed,
        } in held
        {
            contained("session/prompt", || {
                crate::handlers::prompt(self, reply, *request, doomed);
            });
        }
    }
}

/// Runs a handler so that its panic costs only its own request (answered by its dropped
/// [`Reply`]) and never the connection.
fn contained(method: &str, handler: impl FnOnce()) {
    if let Err(panic) = dsh_kernel::contain::catch(handler) {
        tracing::error!(%method, %panic, "a request handler panicked");
    }
}

/// For each frame: is it a `session/prompt` that a later frame of the list cancels (a
/// `session/cancel` of its session, or a `$/cancel_request` with its id)?
fn cancelled_ahead(frames: &[Frame]) -> Vec<bool> {
    frames
        .iter()
        .enumerate()
        .map(|(i, frame)| {
            let Frame::Request {
                reply,
                request: Ok(Request::Prompt(prompt)),
                ..
            } = frame
            else {
                return false;
            };
            frames[i + 1..].iter().any(|later| match later {
                Frame::Notification(Notification::Cancel { session_id }) => {
                    **session_id == *prompt.session_id.0
                }
                Frame::Notification(Notification::CancelRequest { request_id }) => {
                    request_id == reply.id()
                }
                Frame::Notification(Notification::Ignored)
                | Frame::Request { .. }
                | Frame::Response { .. }
                | Frame::Refuse { .. } => false,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::classify;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    fn frames(lines: &[Value]) -> Vec<Frame> {
        let (out, _writing) = crate::transport::writer(tokio::io::sink(), CancellationToken::new());
        lines
            .iter()
            .map(|l| match classify(l.to_string().as_bytes()) {
                Incoming::Request { id, method, params } => Frame::Request {
                    request: Request::decode(&method, &params),
                    method,
                    reply: Reply::new(out.clone(), id),
                },
                Incoming::Notification { method, params } => {
                    Frame::Notification(Notification::decode(&method, params.as_ref()))
                }
                other => panic!("{other:?}"),
            })
            .collect()
    }

    fn prompt(id: Value, session: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
               "params": {"sessionId": session, "prompt": []}})
    }

    #[tokio::test]
    async fn a_prompt_is_doomed_only_by_a_later_cancel_of_its_own_session_or_id() {
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
        // Dropping the unanswered replies queues -32603s on a writer nobody runs: fine.
        drop(read);
    }
}
