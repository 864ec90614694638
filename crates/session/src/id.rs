//! Session ids: one id names a session, its agent and its shell owner token.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest id accepted from outside, in bytes of UTF-8.
pub const MAX_ID_BYTES: usize = 128;

/// A validated session id: cheap to clone (`Arc<str>` inside).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(Arc<str>);

/// Why an outside id was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid session id \"{}\": {reason}", .id.escape_debug())]
pub struct SessionIdError {
    /// The refused id.
    pub id: String,
    /// What is wrong with it.
    pub reason: SessionIdProblem,
}

/// The rule an id broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionIdProblem {
    /// The id is empty.
    #[error("it is empty")]
    Empty,
    /// The id is longer than [`MAX_ID_BYTES`].
    #[error("it is {len} bytes long; the limit is 128")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The id holds a control character.
    #[error("it holds a control character at byte {index}")]
    ControlChar {
        /// Byte index of the character.
        index: usize,
    },
    /// The id holds `/` or `\`.
    #[error("it holds a path separator at byte {index}")]
    PathSeparator {
        /// Byte index of the separator.
        index: usize,
    },
}

impl SessionId {
    /// A fresh UUID v7 in lowercase hyphenated form (time-ordered, 36 bytes).
    pub fn mint() -> SessionId {
        SessionId(uuid::Uuid::now_v7().hyphenated().to_string().into())
    }

    /// Accepts an outside id iff it is non-empty, at most 128 bytes, and holds no control
    /// character and no `/` or `\`. Any other id (not only UUIDs) is accepted.
    pub fn parse(id: &str) -> Result<SessionId, SessionIdError> {
        let fail = |reason| {
            Err(SessionIdError {
                id: id.to_owned(),
                reason,
            })
        };
        if id.is_empty() {
            return fail(SessionIdProblem::Empty);
        }
        if id.len() > MAX_ID_BYTES {
            return fail(SessionIdProblem::TooLong { len: id.len() });
        }
        for (index, c) in id.char_indices() {
            if c.is_control() {
                return fail(SessionIdProblem::ControlChar { index });
            }
            if c == '/' || c == '\\' {
                return fail(SessionIdProblem::PathSeparator { index });
            }
        }
        Ok(SessionId(id.into()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionId({:?})", &*self.0)
    }
}

impl FromStr for SessionId {
    type Err = SessionIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionId::parse(s)
    }
}

impl Serialize for SessionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        SessionId::parse(&text).map_err(serde::de::Error::custom)
    }
}
