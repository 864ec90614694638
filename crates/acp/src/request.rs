//! What a client asks, decoded once: a request into the [`Request`] dsh serves (or the error
//! that answers it), a notification into the [`Notification`] it acts on.
//!
//! Params are decoded by method with the schema crate (never by shape), so a handler receives
//! its method's own type and has no "misrouted request" case to handle. A method the schema
//! knows but dsh does not serve is "method not found", exactly as an unknown one.

use agent_client_protocol_schema::MethodDispatchError;
use agent_client_protocol_schema::v1::{
    ClientRequest, CloseSessionRequest, DeleteSessionRequest, ListSessionsRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, ResumeSessionRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use serde_json::{Value, json};

use crate::rpc::{RpcError, code};

/// The client capabilities dsh acts on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ClientCaps {
    /// Zed's terminal cards (`_meta.terminal_output: true`).
    pub terminal_output: bool,
    /// Notices (`session.notices`).
    pub notices: bool,
    /// Both `fs.readTextFile` and `fs.writeTextFile`: tools read and write through the
    /// editor.
    pub files: bool,
    /// Compaction updates (`session.compaction`).
    pub compaction: bool,
    /// `plan_update`s (`plan`).
    pub plan: bool,
    /// Child sessions shown as sessions of their own (`subagents`).
    pub subagents: bool,
}

/// A request dsh serves, with its decoded params.
#[derive(Debug)]
pub(crate) enum Request {
    /// `initialize`, with what the client can do.
    Initialize(ClientCaps),
    /// `authenticate`: dsh offers no method, so any call succeeds with nothing to do.
    Authenticate,
    /// `session/new`.
    NewSession(Box<NewSessionRequest>),
    /// `session/load`.
    LoadSession(Box<LoadSessionRequest>),
    /// `session/prompt`.
    Prompt(Box<PromptRequest>),
    /// `session/list`.
    ListSessions(ListSessionsRequest),
    /// `session/resume`: `session/load` without the replay.
    ResumeSession(Box<ResumeSessionRequest>),
    /// `session/close`.
    CloseSession(CloseSessionRequest),
    /// `session/delete`.
    DeleteSession(DeleteSessionRequest),
    /// `session/set_config_option`.
    SetConfigOption(SetSessionConfigOptionRequest),
    /// `session/set_mode`: the mode option under ACP's older name.
    SetMode(SetSessionModeRequest),
}

impl Request {
    /// Decodes `params` as `method`'s; `mcpServers: null` counts as an empty list.
    pub(crate) fn decode(method: &str, params: &Value) -> Result<Request, RpcError> {
        match method {
            "authenticate" => return Ok(Request::Authenticate),
            "initialize"
            | "session/new"
            | "session/load"
            | "session/prompt"
            | "session/list"
            | "session/resume"
            | "session/close"
            | "session/delete"
            | "session/set_config_option"
            | "session/set_mode" => {}
            // Unserved before anything is decoded: "not found", whatever the params hold.
            _ => return Err(not_found(method)),
        }
        let mut params = params.clone();
        if let Some(servers) = params.get_mut("mcpServers")
            && servers.is_null()
        {
            *servers = json!([]);
        }
        let decoded =
            ClientRequest::from_method_and_params(method, &params).map_err(|e| match e {
                MethodDispatchError::UnknownMethod { .. } => not_found(method),
                MethodDispatchError::InvalidPayload { source, .. } => {
                    // The detail may quote prompt text: back to its sender, and to debug logs only.
                    tracing::debug!(%method, error = %source, "params did not decode");
                    RpcError::new(code::INVALID_PARAMS, "Invalid params")
                        .with_data(json!({ "detail": source.to_string() }))
                }
                _ => RpcError::new(code::INVALID_PARAMS, "Invalid params"),
            })?;
        match decoded {
            ClientRequest::InitializeRequest(_) => {
                let flag = |pointer: &str| {
                    params
                        .pointer(pointer)
                        .is_some_and(|v| v == &Value::Bool(true))
                };
                Ok(Request::Initialize(ClientCaps {
                    terminal_output: flag("/clientCapabilities/_meta/terminal_output"),
                    notices: params
                        .pointer("/clientCapabilities/session/notices")
                        .is_some_and(Value::is_object),
                    files: flag("/clientCapabilities/fs/readTextFile")
                        && flag("/clientCapabilities/fs/writeTextFile"),
                    compaction: params
                        .pointer("/clientCapabilities/session/compaction")
                        .is_some_and(Value::is_object),
                    plan: params
                        .pointer("/clientCapabilities/plan")
                        .is_some_and(Value::is_object),
                    subagents: params
                        .pointer("/clientCapabilities/subagents")
                        .is_some_and(Value::is_object),
                }))
            }
            ClientRequest::NewSessionRequest(request) => Ok(Request::NewSession(Box::new(request))),
            ClientRequest::LoadSessionRequest(request) => {
                Ok(Request::LoadSession(Box::new(request)))
            }
            ClientRequest::PromptRequest(request) => Ok(Request::Prompt(Box::new(request))),
            ClientRequest::ListSessionsRequest(request) => Ok(Request::ListSessions(request)),
            ClientRequest::ResumeSessionRequest(request) => {
                Ok(Request::ResumeSession(Box::new(request)))
            }
            ClientRequest::CloseSessionRequest(request) => Ok(Request::CloseSession(request)),
            ClientRequest::DeleteSessionRequest(request) => Ok(Request::DeleteSession(request)),
            ClientRequest::SetSessionConfigOptionRequest(request) => {
                Ok(Request::SetConfigOption(request))
            }
            ClientRequest::SetSessionModeRequest(request) => Ok(Request::SetMode(request)),
            // The names above decode only to the variants above.
            _ => Err(not_found(method)),
        }
    }
}

fn not_found(method: &str) -> RpcError {
    RpcError::new(code::METHOD_NOT_FOUND, "Method not found").with_data(json!({ "method": method }))
}

/// A notification dsh acts on; every other one is ignored (notifications are never answered).
#[derive(Debug, PartialEq)]
pub(crate) enum Notification {
    /// `session/cancel` of this session, as the client spelled its id.
    Cancel { session_id: String },
    /// `$/cancel_request` of the request with this id.
    CancelRequest { request_id: Value },
    /// Anything else, or params without what the method needs.
    Ignored,
}

impl Notification {
    /// Reads `method`'s params (`None`: they were not an object).
    pub(crate) fn decode(method: &str, params: Option<&Value>) -> Notification {
        let Some(params) = params else {
            return Notification::Ignored;
        };
        match method {
            "session/cancel" => match params.get("sessionId").and_then(Value::as_str) {
                Some(id) => Notification::Cancel {
                    session_id: id.to_owned(),
                },
                None => Notification::Ignored,
            },
            "$/cancel_request" => match params.get("requestId") {
                Some(id) => Notification::CancelRequest {
                    request_id: id.clone(),
                },
                None => Notification::Ignored,
            },
            _ => Notification::Ignored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_served_method_decodes_into_its_own_variant() {
        let init = json!({"protocolVersion": 1,
            "clientCapabilities": {"_meta": {"terminal_output": true}}});
        assert!(matches!(
            Request::decode("initialize", &init),
            Ok(Request::Initialize(ClientCaps {
                terminal_output: true,
                notices: false,
                files: false,
                compaction: false,
                plan: false,
                subagents: false
            }))
        ));
        assert!(matches!(
            Request::decode("initialize", &json!({"protocolVersion": 1})),
            Ok(Request::Initialize(ClientCaps {
                terminal_output: false,
                notices: false,
                files: false,
                compaction: false,
                plan: false,
                subagents: false
            }))
        ));
        assert!(matches!(
            Request::decode("authenticate", &json!({})),
            Ok(Request::Authenticate)
        ));
        assert!(matches!(
            Request::decode("session/new", &json!({"cwd": "/w", "mcpServers": null})),
            Ok(Request::NewSession(_))
        ));
        assert!(matches!(
            Request::decode(
                "session/load",
                &json!({"sessionId": "s", "cwd": "/w", "mcpServers": []})
            ),
            Ok(Request::LoadSession(_))
        ));
        assert!(matches!(
            Request::decode("session/prompt", &json!({"sessionId": "s", "prompt": []})),
            Ok(Request::Prompt(_))
        ));
        assert!(matches!(
            Request::decode("session/list", &json!({"cwd": "/w", "cursor": "1/a"})),
            Ok(Request::ListSessions(_))
        ));
        assert!(matches!(
            Request::decode("session/resume", &json!({"sessionId": "s", "cwd": "/w"})),
            Ok(Request::ResumeSession(_))
        ));
        assert!(matches!(
            Request::decode("session/close", &json!({"sessionId": "s"})),
            Ok(Request::CloseSession(_))
        ));
        assert!(matches!(
            Request::decode("session/delete", &json!({"sessionId": "s"})),
            Ok(Request::DeleteSession(_))
        ));
    }

    #[test]
    fn unserved_and_unknown_methods_are_not_found_and_bad_params_invalid() {
        for method in ["session/fork", "no/such"] {
            let error = Request::decode(method, &json!({"sessionId": "s", "modeId": "m"}))
                .expect_err(method);
            assert_eq!(error.code, code::METHOD_NOT_FOUND, "{method}");
            assert_eq!(error.data, Some(json!({"method": method})));
        }
        let error = Request::decode("session/prompt", &json!({"prompt": []})).unwrap_err();
        assert_eq!(error.code, code::INVALID_PARAMS);
    }

    #[test]
    fn notifications_carry_what_they_act_on() {
        assert_eq!(
            Notification::decode("session/cancel", Some(&json!({"sessionId": "a"}))),
            Notification::Cancel {
                session_id: "a".into()
            }
        );
        assert_eq!(
            Notification::decode("$/cancel_request", Some(&json!({"requestId": 7}))),
            Notification::CancelRequest {
                request_id: json!(7)
            }
        );
        for (method, params) in [
            ("session/cancel", Some(json!({"nonsense": true}))),
            ("session/cancel", None),
            ("$/cancel_request", Some(json!({}))),
            ("something/else", Some(json!({"sessionId": "a"}))),
        ] {
            assert_eq!(
                Notification::decode(method, params.as_ref()),
                Notification::Ignored,
                "{method}"
            );
        }
    }
}
