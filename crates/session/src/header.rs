//! The session header: immutable after `prepare`, stored outside the log, never
//! part of model history.

use serde::{Deserialize, Serialize};

use crate::error::SessionError;
use crate::id::SessionId;

/// The format version this dsh writes and reads.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// What a session is, independent of its events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Format version of the log.
    pub version: u32,
    /// The session (and agent) id.
    pub id: SessionId,
    /// Epoch milliseconds at `prepare`, ≥ 0.
    pub created_at: i64,
    /// The absolute, lexically normalized working directory.
    pub cwd: String,
    /// The session this one was forked from, or whose child it is (with `parent_call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<SessionId>,
    /// How many leading events were inherited from the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_len: Option<u64>,
    /// The parent's tool call that started this session as its child (a subagent's
    /// session): then `parent` names the parent session and nothing was inherited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call: Option<String>,
}

/// Lexically normalizes an absolute working directory: repeated separators collapse, `.`
/// components and a trailing separator go, `..` stays, symlinks are not resolved. A relative
/// path or one holding NUL is refused.
pub fn normalize_cwd(cwd: &str) -> Result<String, SessionError> {
    let invalid = |reason: &str| SessionError::InvalidHeader {
        field: "cwd",
        reason: format!("{cwd:?} {reason}"),
    };
    if !cwd.starts_with('/') {
        return Err(invalid("is not an absolute path"));
    }
    if cwd.contains('\0') {
        return Err(invalid("holds a NUL byte"));
    }
    let parts: Vec<&str> = cwd
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    Ok(format!("/{}", parts.join("/")))
}
