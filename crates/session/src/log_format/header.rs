//! The header line of a log.

use crate::{SESSION_FORMAT_VERSION, SessionHeader, SessionId};
use serde::{Deserialize, Serialize};

/// The value of the header's `format` key.
pub const FORMAT: &str = "dsh-session";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    format: String,
    version: u32,
    id: SessionId,
    created_at: i64,
    cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed_len: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_call: Option<String>,
}

/// The header line, with its `\n`.
pub fn encode(header: &SessionHeader) -> Vec<u8> {
    let line = Line {
        format: FORMAT.into(),
        version: header.version,
        id: header.id.clone(),
        created_at: header.created_at,
        cwd: header.cwd.clone(),
        parent: header.parent.clone(),
        seed_len: header.seed_len,
        parent_call: header.parent_call.clone(),
    };
    let mut out = serde_json::to_vec(&line).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Why a header line was refused.
pub enum HeaderProblem {
    /// Not a dsh header: the reason.
    Corrupt(String),
    /// Another format version.
    Version(u32),
}

/// Decodes a header line (without its `\n`): shape first, then version, then fields.
pub fn decode(bytes: &[u8]) -> Result<SessionHeader, HeaderProblem> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| HeaderProblem::Corrupt(format!("header is not JSON ({e})")))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(HeaderProblem::Corrupt("not a dsh-session header".into()));
    }
    let version = value
        .get("version")
        .and_then(|v| v.as_u64())
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| HeaderProblem::Corrupt("header has no valid version".into()))?;
    if version != SESSION_FORMAT_VERSION {
        return Err(HeaderProblem::Version(version));
    }
    let line: Line = serde_json::from_value(value)
        .map_err(|e| HeaderProblem::Corrupt(format!("invalid header ({e})")))?;
    if !line.cwd.starts_with('/') || line.created_at < 0 {
        return Err(HeaderProblem::Corrupt(
            "invalid header cwd or created_at".into(),
        ));
    }
    Ok(SessionHeader {
        version,
        id: line.id,
        created_at: line.created_at,
        cwd: line.cwd,
        parent: line.parent,
        seed_len: line.seed_len,
        parent_call: line.parent_call,
    })
}

/// The header record of the log of `id` stored at `location`, refused as every provider
/// refuses one: not a header (record 1 is corrupt), another format version, another id.
pub fn read(
    id: &SessionId,
    bytes: &[u8],
    location: &crate::SessionLocation,
) -> Result<SessionHeader, crate::PersistenceError> {
    use crate::PersistenceError;
    let header = decode(bytes).map_err(|problem| match problem {
        HeaderProblem::Corrupt(reason) => PersistenceError::Corrupt {
            id: id.clone(),
            location: location.clone(),
            line: Some(1),
            reason,
        },
        HeaderProblem::Version(found) => PersistenceError::UnsupportedVersion {
            id: id.clone(),
            location: location.clone(),
            found,
            supported: SESSION_FORMAT_VERSION,
        },
    })?;
    if &header.id != id {
        return Err(PersistenceError::IdMismatch {
            requested: id.clone(),
            found: header.id,
            location: location.clone(),
        });
    }
    Ok(header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_s_header_line_round_trips() {
        let header = SessionHeader {
            version: SESSION_FORMAT_VERSION,
            id: SessionId::parse("child-1").unwrap(),
            created_at: 7,
            cwd: "/w".into(),
            parent: Some(SessionId::parse("parent-1").unwrap()),
            seed_len: None,
            parent_call: Some("call_0_1".into()),
        };
        let line = encode(&header);
        let decoded = decode(&line[..line.len() - 1]);
        assert_eq!(decoded.ok(), Some(header));
    }
}
