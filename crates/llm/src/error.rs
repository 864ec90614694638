//! Model errors.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What kind of failure a model call met. The snake_case code is stored as a turn's error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    /// Credentials rejected (401, 403).
    Auth,
    /// Too many requests (429).
    RateLimited,
    /// No funds or quota (402; 429 `insufficient_quota`).
    InsufficientBalance,
    /// The request is invalid (other 4xx; failed validation).
    BadRequest,
    /// The request is longer than the model's context (a 4xx that says so): compacting the
    /// history and sending it again can succeed.
    ContextOverflow,
    /// The server failed or was overloaded (408, 5xx, in-stream errors).
    Server,
    /// Connection, TLS, DNS, idle timeout, body cut short.
    Transport,
    /// The response broke the wire format.
    Protocol,
    /// The caller cancelled.
    Cancelled,
}

impl ModelErrorKind {
    /// The snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            ModelErrorKind::Auth => "auth",
            ModelErrorKind::RateLimited => "rate_limited",
            ModelErrorKind::InsufficientBalance => "insufficient_balance",
            ModelErrorKind::BadRequest => "bad_request",
            ModelErrorKind::ContextOverflow => "context_overflow",
            ModelErrorKind::Server => "server",
            ModelErrorKind::Transport => "transport",
            ModelErrorKind::Protocol => "protocol",
            ModelErrorKind::Cancelled => "cancelled",
        }
    }
}

/// A failed model call. Displays as `<kind> (HTTP <status>): <message>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct ModelError {
    /// The kind.
    pub kind: ModelErrorKind,
    /// What happened, for people (never the API key).
    pub message: String,
    /// The HTTP status, when a server answered.
    pub status: Option<u16>,
    /// How long the server asked us to wait.
    pub retry_after: Option<Duration>,
    /// The server's request id, when known.
    pub request_id: Option<String>,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} (HTTP {status}): {}", self.kind.code(), self.message),
            None => write!(f, "{}: {}", self.kind.code(), self.message),
        }
    }
}

impl ModelError {
    /// An error of `kind` with `message` and nothing else.
    pub fn new(kind: ModelErrorKind, message: impl Into<String>) -> ModelError {
        ModelError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            request_id: None,
        }
    }

    /// The caller cancelled.
    pub fn cancelled() -> ModelError {
        ModelError::new(ModelErrorKind::Cancelled, "the request was cancelled")
    }
}
