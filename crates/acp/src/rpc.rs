//! JSON-RPC 2.0 values: request ids, error objects and the frames the bridge writes.
//!
//! Frames are built as compact JSON text here and nowhere else, so every line the writer
//! sends has the same envelope, and an id is always echoed exactly as it was received (a
//! string `"1"` never becomes the number `1`).

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// The standard codes, and ACP's "resource not found".
pub(crate) mod code {
    /// Not JSON, not UTF-8, or over the line limit.
    pub const PARSE: i32 = -32700;
    /// A malformed envelope, a batch, or a request before `initialize`.
    pub const INVALID_REQUEST: i32 = -32600;
    /// An unknown or unadvertised method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Parameters that do not decode or break a rule.
    pub const INVALID_PARAMS: i32 = -32602;
    /// A failure inside dsh.
    pub const INTERNAL: i32 = -32603;
    /// An unknown session.
    pub const NOT_FOUND: i32 = -32002;
    /// ACP's `auth_required`: the agent needs the user to authenticate first.
    pub const AUTH_REQUIRED: i32 = -32000;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: i32,
    /// One short sentence, never holding prompt text, tool output or secrets.
    pub message: String,
    /// Structured detail for the client.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data`.
    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(data);
        self
    }

    /// `-32002` for a session this connection does not know, echoing the id as sent.
    pub fn session_not_found(session_id: &str) -> RpcError {
        RpcError::new(code::NOT_FOUND, "Resource not found")
            .with_data(json!({ "sessionId": session_id }))
    }

    /// `-32602` naming the field that broke a rule.
    pub fn bad_field(field: &str, message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message).with_data(json!({ "field": field }))
    }

    /// `-32603` for a request whose handler failed inside dsh (it panicked): the client
    /// learns only that, never the panic text.
    pub fn internal_failure() -> RpcError {
        RpcError::new(code::INTERNAL, "internal error: the request failed")
    }

    /// `-32000` with the guidance of what the user must set up.
    pub fn auth_required(guidance: &str) -> RpcError {
        RpcError::new(code::AUTH_REQUIRED, guidance)
    }

    /// `-32603` "dsh is shutting down".
    pub fn shutting_down() -> RpcError {
        RpcError::new(code::INTERNAL, "dsh is shutting down")
    }

    /// The error as its JSON object.
    pub fn to_value(&self) -> Value {
        let mut object = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            object["data"] = data.clone();
        }
        object
    }
}

/// The envelope of every frame, serialized straight to text around borrowed parts: no
/// intermediate JSON tree is built for a frame (a streamed chunk is one frame each).
#[derive(Serialize)]
struct Frame<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Id<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a P>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Body<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// A result: a JSON tree, or JSON text made once from the schema's types.
#[derive(Serialize)]
#[serde(untagged)]
enum Body<'a> {
    Tree(&'a Value),
    Text(&'a RawValue),
}

/// An id as received (echoed exactly), or one of the bridge's own.
#[derive(Serialize)]
#[serde(untagged)]
enum Id<'a> {
    Echoed(&'a Value),
    Own(i64),
}

impl<'a, P: Serialize> Frame<'a, P> {
    fn new() -> Frame<'a, P> {
        Frame {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        }
    }

    /// The frame's text. Serializing JSON values and the schema's types cannot fail but on
    /// a non-string map key, which neither has; that case still yields a valid frame.
    fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            tracing::error!(error = %e, "a frame did not serialise");
            r#"{"jsonrpc":"2.0","method":"$/dsh_frame_lost","params":{}}"#.to_owned()
        })
    }
}

/// A response carrying `result`.
pub fn result_frame(id: &Value, result: Value) -> String {
    Frame::<Value> {
        id: Some(Id::Echoed(id)),
        result: Some(Body::Tree(&result)),
        ..Frame::new()
    }
    .text()
}

/// A response carrying `result`, already JSON text.
pub fn raw_result_frame(id: &Value, result: &RawValue) -> String {
    Frame::<Value> {
        id: Some(Id::Echoed(id)),
        result: Some(Body::Text(result)),
        ..Frame::new()
    }
    .text()
}

/// A response carrying `error`.
pub fn error_frame(id: &Value, error: &RpcError) -> String {
    Frame::<Value> {
        id: Some(Id::Echoed(id)),
        error: Some(error.to_value()),
        ..Frame::new()
    }
    .text()
}

/// A request from the bridge to the client, its params a schema type.
pub fn request_frame(id: i64, method: &str, params: &impl Serialize) -> String {
    Frame {
        id: Some(Id::Own(id)),
        method: Some(method),
        params: Some(params),
        ..Frame::new()
    }
    .text()
}

/// A notification from the bridge to the client, its params any serializable value (a
/// schema type goes to text in one pass).
pub fn notification_frame(method: &str, params: &impl Serialize) -> String {
    Frame {
        method: Some(method),
        params: Some(params),
        ..Frame::new()
    }
    .text()
}
