//! Cold reads: the stored records judged by the same rule as every provider's
//! (`dsh_session::log_format::scan`), and for `load`, the torn tail a damaged store may hold
//! cut off and the interrupted turn closed, in one transaction under the writer's lease.

use std::io::Cursor;

use dsh_session::log_format::header;
use dsh_session::log_format::scan::analyse;
use dsh_session::log_format::verdict::judge;
use dsh_session::{
    EventVocabulary, LoadedSession, PersistenceError, SessionHeader, SessionId, StoreRevision,
};

use crate::store::{Store, io};

/// Whether a read may change what is stored.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `load`: under the lease, repairs durably.
    Load,
    /// `inspect`: no lease, no write.
    Inspect,
}

/// A session's header, revision and records, in one round trip.
const READ: &str = "SELECT s.header, s.revision,
                    coalesce((SELECT string_agg(c.records, ''::bytea ORDER BY c.start_byte)
                                FROM dsh_chunks c WHERE c.session_id = s.id), ''::bytea)
               FROM dsh_sessions s WHERE s.id = $1";

/// A stored log as read: its header record, its event records, and its revision.
pub(crate) struct Raw {
    pub header: Vec<u8>,
    pub records: Vec<u8>,
    pub revision: i64,
}

/// The stored log of `id`, in one round trip; `None` when there is none.
pub(crate) async fn raw(store: &Store, id: &SessionId) -> Result<Option<Raw>, PersistenceError> {
    let op = "reading the session";
    let failed = |e| io(Some(id), &store.shown, op, e);
    let client = store.client(Some(id), op).await?;
    let statement = client.prepare_cached(READ).await.map_err(failed)?;
    let row = client
        .query_opt(&statement, &[&id.as_str()])
        .await
        .map_err(failed)?;
    Ok(row.map(|row| Raw {
        header: row.get(0),
        revision: row.get(1),
        records: row.get(2),
    }))
}

/// Decodes a stored header record, refused as every provider refuses one.
pub(crate) fn decode_header(
    store: &Store,
    id: &SessionId,
    bytes: &[u8],
) -> Result<SessionHeader, PersistenceError> {
    let header = header::read(id, bytes, &store.location(id))?;
    Ok(header)
}

/// Loads (or inspects) the stored log of `raw`; `token` is the lease a load holds.
pub(crate) async fn read(
    store: &Store,
    id: &SessionId,
    raw: Raw,
    known: &EventVocabulary,
    lease: Option<i64>,
) -> Result<LoadedSession, PersistenceError> {
    let header = decode_header(store, id, &raw.header)?;
    let analysis =
        analyse(&mut Cursor::new(&raw.records[..]), 0).map_err(|e| PersistenceError::Io {
            id: Some(id.clone()),
            location: store.shown.clone(),
            op: "reading the session",
            source: e,
        })?;
    let verdict =
        judge(analysis, known).map_err(|refusal| refusal.into_error(id, store.location(id)))?;
    let mut revision = raw.revision;
    if let Some(token) = lease
        && verdict.repairs()
    {
        let mut tail = Vec::new();
        for closer in &verdict.closers {
            closer.encode_into(&mut tail);
            tail.push(b'\n');
        }
        revision = repair(store, id, token, verdict.kept_end as i64, &tail).await?;
        tracing::warn!(
            session = %id,
            location = %store.location(id),
            report = ?verdict.report,
            "repaired a session log left by a process that stopped mid-turn"
        );
    }
    Ok(LoadedSession {
        header,
        events: verdict.events,
        repair: verdict.report,
        revision: StoreRevision(revision.to_string()),
        location: store.location(id),
    })
}

/// Cuts the stored records at `kept` bytes and stores `closers` after them, fenced by the
/// lease `token`; the new revision.
async fn repair(
    store: &Store,
    id: &SessionId,
    token: i64,
    kept: i64,
    closers: &[u8],
) -> Result<i64, PersistenceError> {
    let op = "repairing the session";
    let failed = |e| io(Some(id), &store.shown, op, e);
    let mut client = store.client(Some(id), op).await?;
    let tx = client.transaction().await.map_err(failed)?;
    let leased = tx
        .query_opt(
            "SELECT 1 FROM dsh_leases WHERE session_id = $1 AND token = $2 FOR UPDATE",
            &[&id.as_str(), &token],
        )
        .await
        .map_err(failed)?;
    if leased.is_none() {
        return Err(crate::lease::locked(store, id).await);
    }
    tx.execute(
        "DELETE FROM dsh_chunks WHERE session_id = $1 AND start_byte >= $2",
        &[&id.as_str(), &kept],
    )
    .await
    .map_err(failed)?;
    tx.execute(
        "UPDATE dsh_chunks
            SET records = substring(records FROM 1 FOR ($2::bigint - start_byte)::int)
          WHERE session_id = $1 AND start_byte < $2::bigint
            AND start_byte + length(records) > $2::bigint",
        &[&id.as_str(), &kept],
    )
    .await
    .map_err(failed)?;
    if !closers.is_empty() {
        tx.execute(
            "INSERT INTO dsh_chunks (session_id, start_byte, records) VALUES ($1, $2, $3)",
            &[&id.as_str(), &kept, &closers],
        )
        .await
        .map_err(failed)?;
    }
    let row = tx
        .query_one(
            "UPDATE dsh_sessions SET bytes = $2::bigint + length($3::bytea),
                    revision = nextval('dsh_revision')
              WHERE id = $1 RETURNING revision",
            &[&id.as_str(), &kept, &closers],
        )
        .await
        .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(row.get(0))
}
