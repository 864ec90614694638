//! The session history an editor shows and manages: `session/list` (headers only, newest
//! first, a page at a time), `session/close` (the agent goes, the log stays) and
//! `session/delete` (the log goes, unless the session is open).
//!
//! A page ends at a cursor naming its last session's place in the order (updated time, then
//! id), not an offset: a session written meanwhile moves to the top of the list and shifts
//! nothing the client has not seen yet.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use agent_client_protocol_schema::v1::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ListSessionsRequest, ListSessionsResponse, SessionInfo,
};
use dsh_session::{CancelCause, ListQuery, PersistenceError, SessionId, SessionSummary};
use serde_json::json;

use super::setup::{setup_contained, spawn_setup};
use crate::conn::Conn;
use crate::reply::{Reply, result};
use crate::rpc::{RpcError, code};

/// Sessions in one page of `session/list`.
pub(crate) const PAGE: usize = 50;

/// How long the pages after a first one are served from its listing: reading every header
/// again per page would cost a client that scrolls through 10,000 sessions minutes.
const LISTING_REUSED_FOR: Duration = Duration::from_secs(60);

/// One listing: its cwd filter, when it was read, and the sessions.
struct Listed {
    cwd: Option<String>,
    read: Instant,
    sessions: Arc<Vec<SessionSummary>>,
}

/// The last listing of a connection.
#[derive(Default)]
pub(crate) struct ListCache(Mutex<Option<Listed>>);

impl ListCache {
    /// The cached sessions for `cwd`, when read recently enough.
    fn get(&self, cwd: &Option<String>) -> Option<Arc<Vec<SessionSummary>>> {
        let cached = self.0.lock();
        let listed = cached.as_ref()?;
        (&listed.cwd == cwd && listed.read.elapsed() < LISTING_REUSED_FOR)
            .then(|| listed.sessions.clone())
    }

    fn put(&self, cwd: Option<String>, sessions: Arc<Vec<SessionSummary>>) {
        *self.0.lock() = Some(Listed {
            cwd,
            read: Instant::now(),
            sessions,
        });
    }
}

/// `session/list`: the stored sessions (of `cwd`, when given), newest first.
pub(crate) fn list_sessions(conn: &Arc<Conn>, reply: Reply, request: ListSessionsRequest) {
    if let Some(cwd) = &request.cwd
        && !cwd.is_absolute()
    {
        return reply.send(Err(RpcError::bad_field(
            "cwd",
            "cwd must be an absolute path",
        )));
    }
    let after = match request.cursor.as_deref().map(Cursor::parse) {
        None => None,
        Some(Some(cursor)) => Some(cursor),
        Some(None) => return reply.send(Err(RpcError::bad_field("cursor", "unknown cursor"))),
    };
    // A filter that cannot be a session's directory is an error, never "no filter".
    let cwd = match request
        .cwd
        .as_deref()
        .map(|cwd| dsh_session::normalize_cwd(&cwd.display().to_string()))
        .transpose()
    {
        Ok(cwd) => cwd,
        Err(e) => {
            let message = format!("cwd cannot be a session's directory ({e})");
            return reply.send(Err(RpcError::bad_field("cwd", message)));
        }
    };
    let query = ListQuery { cwd, project: None };
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        let listed = setup_contained("session/list", async {
            // A first page reads the store afresh; the pages after it reuse that listing.
            let cached = after.as_ref().and_then(|_| conn2.listed().get(&query.cwd));
            let sessions = match cached {
                Some(sessions) => sessions,
                None => {
                    let listing = conn2
                        .services()
                        .persistence
                        .list(&query)
                        .await
                        .map_err(|e| RpcError::new(code::INTERNAL, e.to_string()))?;
                    let sessions = Arc::new(listing.sessions);
                    conn2.listed().put(query.cwd.clone(), sessions.clone());
                    sessions
                }
            };
            Ok(page(&sessions, after.as_ref()))
        })
        .await;
        reply
            .answer(listed.map(|page| serde_json::to_value(page).unwrap_or_default()))
            .await;
    });
}

/// One page of `sessions` (already newest first), after `after`.
fn page(sessions: &[SessionSummary], after: Option<&Cursor>) -> ListSessionsResponse {
    let start = after.map_or(0, |cursor| {
        sessions
            .iter()
            .position(|s| cursor.is_before(s))
            .unwrap_or(sessions.len())
    });
    let rest = &sessions[start..];
    let shown: Vec<SessionInfo> = rest.iter().take(PAGE).map(info).collect();
    let next = (rest.len() > PAGE)
        .then(|| rest.get(PAGE - 1).map(|s| Cursor::of(s).to_string()))
        .flatten();
    ListSessionsResponse::new(shown).next_cursor(next)
}

fn info(summary: &SessionSummary) -> SessionInfo {
    // Always three fractional digits: `…09.830Z`, never `…09.83Z`, so that the times sort as
    // text in the order they sort as times (a client may compare them as strings).
    let updated = jiff::Timestamp::from_millisecond(summary.updated_at)
        .ok()
        .map(|t| format!("{t:.3}"));
    SessionInfo::new(
        summary.header.id.as_str().to_owned(),
        Path::new(&summary.header.cwd).to_path_buf(),
    )
    .updated_at(updated)
    .title(summary.title.clone())
}

/// A place in the list's order: newest first, then by id.
#[derive(Debug, PartialEq)]
struct Cursor {
    updated_at: i64,
    id: String,
}

impl Cursor {
    fn of(summary: &SessionSummary) -> Cursor {
        Cursor {
            updated_at: summary.updated_at,
            id: summary.header.id.as_str().to_owned(),
        }
    }

    fn parse(text: &str) -> Option<Cursor> {
        let (updated_at, id) = text.split_once('/')?;
        Some(Cursor {
            updated_at: updated_at.parse().ok()?,
            id: id.to_owned(),
        })
    }

    /// Whether `summary` comes after this place in the order.
    fn is_before(&self, summary: &SessionSummary) -> bool {
        summary.updated_at < self.updated_at
            || (summary.updated_at == self.updated_at
                && summary.header.id.as_str() > self.id.as_str())
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.updated_at, self.id)
    }
}

/// `session/close`: cancels the session's work as `session/cancel` does, disposes its agent
/// and forgets it; the log stays, and `session/load` or `session/resume` brings it back.
pub(crate) fn close_session(conn: &Arc<Conn>, reply: Reply, request: CloseSessionRequest) {
    let sent = request.session_id.0.to_string();
    let Some(record) = conn.state().remove(&sent) else {
        return reply.send(Err(RpcError::session_not_found(&sent)));
    };
    crate::handlers::cancel_record(conn, &record);
    record.agent.cancel(CancelCause::User);
    let grace = conn.config().cancel_grace;
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        record.close(grace).await;
        if let Err(err) = conn2.services().store.flush(&record.id).await {
            tracing::warn!(session = %sent, "the closed session's last events: {err}");
        }
        tracing::info!(session = %sent, "session closed");
        reply.answer(result(&CloseSessionResponse::new())).await;
    });
}

/// `session/delete`: removes the stored log, as `dsh sessions rm` does. A session open here
/// or anywhere else is refused (close it first); one that does not exist is deleted already.
pub(crate) fn delete_session(conn: &Arc<Conn>, reply: Reply, request: DeleteSessionRequest) {
    let sent = request.session_id.0.to_string();
    if conn.state().record(&sent).is_some() {
        return reply.send(Err(open_session(
            &sent,
            "it is open in this editor; close it first",
        )));
    }
    let Ok(id) = SessionId::parse(&sent) else {
        return reply.send(result(&DeleteSessionResponse::new()));
    };
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        let deleted = setup_contained("session/delete", async {
            match conn2.services().persistence.delete(&id).await {
                Ok(()) | Err(PersistenceError::NotFound { .. }) => {
                    result(&DeleteSessionResponse::new())
                }
                Err(PersistenceError::Live { .. } | PersistenceError::Locked { .. }) => {
                    Err(open_session(
                        &sent,
                        "it is open in another session of dsh; close it there first",
                    ))
                }
                Err(other) => Err(RpcError::new(code::INTERNAL, other.to_string())
                    .with_data(json!({ "sessionId": sent }))),
            }
        })
        .await;
        if deleted.is_ok() {
            tracing::info!(session = %sent, "session deleted");
        }
        reply.answer(deleted).await;
    });
}

fn open_session(sent: &str, why: &str) -> RpcError {
    RpcError::new(
        code::INVALID_PARAMS,
        format!("the session cannot be deleted: {why}"),
    )
    .with_data(json!({ "sessionId": sent }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SessionHeader, SessionLocation};

    fn summary(id: &str, updated_at: i64) -> SessionSummary {
        SessionSummary {
            header: SessionHeader {
                version: 1,
                id: SessionId::parse(id).unwrap(),
                created_at: 0,
                cwd: "/work".into(),
                parent: None,
                seed_len: None,
                parent_call: None,
            },
            location: SessionLocation {
                provider: "test",
                display: id.into(),
                path: None,
            },
            updated_at,
            title: None,
        }
    }

    #[test]
    fn pages_follow_the_order_and_a_cursor_survives_a_newer_session() {
        let ids: Vec<String> = (0..(PAGE * 2 + 5))
            .map(|i| format!("01a24000-0000-7000-8000-{i:012}"))
            .collect();
        // Newest first; pairs share a time, then go by id, as the store lists them.
        let sessions: Vec<SessionSummary> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| summary(id, 1_000_000 - (i as i64 / 2)))
            .collect();
        let first = page(&sessions, None);
        assert_eq!(first.sessions.len(), PAGE);
        let cursor = Cursor::parse(first.next_cursor.as_deref().unwrap()).unwrap();
        // A session written meanwhile goes to the top and shifts nothing after the cursor.
        let mut later = vec![summary("01a24000-0000-7000-8000-999999999999", 2_000_000)];
        later.extend(sessions.clone());
        let second = page(&later, Some(&cursor));
        assert_eq!(second.sessions[0].session_id.0.as_ref(), ids[PAGE]);
        let third = page(
            &later,
            Some(&Cursor::parse(second.next_cursor.as_deref().unwrap()).unwrap()),
        );
        assert_eq!(third.sessions.len(), 5);
        assert!(third.next_cursor.is_none());
        assert_eq!(Cursor::parse("nonsense"), None);
    }

    #[test]
    fn update_times_have_three_fractional_digits_and_sort_as_text() {
        let id = "01a24000-0000-7000-8000-000000000000";
        for (ms, shown) in [
            (1_796_417_169_830, "2026-12-04T20:46:09.830Z"),
            (1_796_417_169_835, "2026-12-04T20:46:09.835Z"),
            (1_796_417_169_000, "2026-12-04T20:46:09.000Z"),
            (1_796_417_169_007, "2026-12-04T20:46:09.007Z"),
        ] {
            let info = info(&summary(id, ms));
            assert_eq!(info.updated_at.as_deref(), Some(shown));
        }
    }
}
