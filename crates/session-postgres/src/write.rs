//! One session open for writing: the events accepted and not yet stored, and the write that
//! stores them. A write is one statement (one round trip): it renews the lease and checks its
//! token, stores the batch as one chunk at the offset the stored log ends at, and moves the
//! session's revision, all or nothing. A write whose answer was lost (the connection broke
//! after the server committed) is recognised when retried, so nothing is stored twice.

use std::sync::Arc;

use dsh_session::log_format::header;
use dsh_session::{
    PersistenceError, SESSION_TITLE, SessionEvent, SessionHeader, SessionId, TitleRecord,
};
use parking_lot::Mutex;

use crate::store::{Store, io};

/// A write to a stored session: the lease renewed and checked, the row moved only where the
/// stored bytes end where this writer left them, the chunk stored; all or nothing.
const APPEND: &str = "WITH lease AS (
                        UPDATE dsh_leases
                           SET expires_at = clock_timestamp() + make_interval(secs => $6)
                         WHERE session_id = $1 AND token = $2 RETURNING 1),
                     sess AS (
                        UPDATE dsh_sessions
                           SET bytes = $3::bigint + length($4::bytea),
                               updated_at = CASE WHEN $5
                                   THEN (extract(epoch FROM clock_timestamp()) * 1000)::bigint
                                   ELSE updated_at END,
                               title = coalesce($7, title),
                               revision = nextval('dsh_revision')
                         WHERE id = $1 AND bytes = $3::bigint AND EXISTS (SELECT 1 FROM lease)
                         RETURNING revision),
                     chunk AS (
                        INSERT INTO dsh_chunks (session_id, start_byte, records)
                        SELECT $1, $3, $4 FROM sess RETURNING 1)
                     SELECT (SELECT count(*) FROM lease), (SELECT revision FROM sess)";

/// The first write of a session: its row and first chunk, under the lease.
const FIRST: &str = "WITH lease AS (
                        UPDATE dsh_leases
                           SET expires_at = clock_timestamp() + make_interval(secs => $4)
                         WHERE session_id = $1 AND token = $2 RETURNING 1),
                     sess AS (
                        INSERT INTO dsh_sessions (id, header, cwd, parent, created_at,
                                                  updated_at, title, bytes, revision, project)
                        SELECT $1, $5, $6, $7, $8,
                               (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
                               $9, length($3::bytea), nextval('dsh_revision'), $10
                          FROM lease
                        ON CONFLICT (id) DO NOTHING
                        RETURNING revision),
                     chunk AS (
                        INSERT INTO dsh_chunks (session_id, start_byte, records)
                        SELECT $1, 0, $3 FROM sess RETURNING 1)
                     SELECT (SELECT count(*) FROM lease), (SELECT revision FROM sess)";

/// What one `append` brought.
struct Batch {
    /// Its records, each `\n`-terminated.
    bytes: Vec<u8>,
    /// Whether it holds more than titles: what moves the listing's `updated_at`.
    activity: bool,
    /// The last title it sets.
    title: Option<String>,
}

/// Accepted events not yet stored.
#[derive(Default)]
struct Buffer {
    batches: Vec<Batch>,
    /// The seq the next accepted event must have.
    next_seq: u64,
}

/// What is stored.
struct Stored {
    /// Whether the session's row exists (its first write happened).
    materialized: bool,
    /// The bytes of records stored after the header.
    bytes: i64,
}

/// A session open for writing.
pub(crate) struct Open {
    pub header: SessionHeader,
    /// The lease's fencing token this instance holds.
    pub token: i64,
    buffer: Mutex<Buffer>,
    stored: tokio::sync::Mutex<Stored>,
    poisoned: Mutex<Option<String>>,
}

impl Open {
    /// A session nothing is stored of yet.
    pub(crate) fn new(header: SessionHeader, token: i64) -> Open {
        Open::resumed(header, token, 0, None)
    }

    /// A session `bytes` of records are stored of (`None`: not materialized), whose next
    /// event has seq `next_seq`.
    pub(crate) fn resumed(
        header: SessionHeader,
        token: i64,
        next_seq: u64,
        bytes: Option<i64>,
    ) -> Open {
        Open {
            header,
            token,
            buffer: Mutex::new(Buffer {
                batches: Vec::new(),
                next_seq,
            }),
            stored: tokio::sync::Mutex::new(Stored {
                materialized: bytes.is_some(),
                bytes: bytes.unwrap_or(0),
            }),
            poisoned: Mutex::new(None),
        }
    }

    pub(crate) fn poisoned(&self) -> Option<PersistenceError> {
        self.poisoned
            .lock()
            .as_ref()
            .map(|cause| PersistenceError::Poisoned {
                id: self.header.id.clone(),
                cause: cause.clone(),
            })
    }

    fn poison(&self, cause: String) -> PersistenceError {
        *self.poisoned.lock() = Some(cause.clone());
        PersistenceError::Poisoned {
            id: self.header.id.clone(),
            cause,
        }
    }

    /// Accepts a contiguous batch; true when the buffer was empty (a write-behind is due).
    pub(crate) fn accept(&self, events: &[Arc<SessionEvent>]) -> Result<bool, PersistenceError> {
        let mut buffer = self.buffer.lock();
        for (index, event) in events.iter().enumerate() {
            let expected = buffer.next_seq + index as u64;
            if event.seq != expected {
                return Err(PersistenceError::SeqMismatch {
                    id: self.header.id.clone(),
                    expected,
                    got: event.seq,
                    index,
                });
            }
        }
        if events.is_empty() {
            return Ok(false);
        }
        let mut batch = Batch {
            bytes: Vec::new(),
            activity: false,
            title: None,
        };
        for event in events {
            event.encode_into(&mut batch.bytes);
            batch.bytes.push(b'\n');
            if event.kind.as_str() == SESSION_TITLE {
                if let Ok(record) = serde_json::from_str::<TitleRecord>(event.data.get()) {
                    batch.title = Some(record.title);
                }
            } else {
                batch.activity = true;
            }
        }
        buffer.next_seq += events.len() as u64;
        let was_empty = buffer.batches.is_empty();
        buffer.batches.push(batch);
        Ok(was_empty)
    }

    /// Whether anything of the session is stored.
    pub(crate) async fn materialized(&self) -> bool {
        self.stored.lock().await.materialized
    }

    /// Drops what is not stored (an abandoned session); whether anything is stored.
    pub(crate) async fn abandon(&self) -> bool {
        self.buffer.lock().batches.clear();
        self.stored.lock().await.materialized
    }

    /// Stores everything accepted so far.
    pub(crate) async fn write(&self, store: &Store) -> Result<(), PersistenceError> {
        let mut stored = self.stored.lock().await;
        if let Some(poisoned) = self.poisoned() {
            return Err(poisoned);
        }
        let (taken, bytes, activity, title) = {
            let buffer = self.buffer.lock();
            let taken = buffer.batches.len();
            let mut bytes = Vec::new();
            for batch in &buffer.batches {
                bytes.extend_from_slice(&batch.bytes);
            }
            let activity = buffer.batches.iter().any(|b| b.activity);
            let title = buffer.batches.iter().rev().find_map(|b| b.title.clone());
            (taken, bytes, activity, title)
        };
        if taken == 0 {
            return Ok(());
        }
        let id = &self.header.id;
        let op = "storing the session's events";
        let client = store.client(Some(id), op).await?;
        let len = bytes.len() as i64;
        let failed = |e| io(Some(id), &store.shown, op, e);
        let row = if stored.materialized {
            let statement = client.prepare_cached(APPEND).await.map_err(failed)?;
            client
                .query_one(
                    &statement,
                    &[
                        &id.as_str(),
                        &self.token,
                        &stored.bytes,
                        &bytes,
                        &activity,
                        &store.ttl_secs(),
                        &title,
                    ],
                )
                .await
        } else {
            let mut head = header::encode(&self.header);
            head.pop();
            let statement = client.prepare_cached(FIRST).await.map_err(failed)?;
            client
                .query_one(
                    &statement,
                    &[
                        &id.as_str(),
                        &self.token,
                        &bytes,
                        &store.ttl_secs(),
                        &head,
                        &self.header.cwd,
                        &self.header.parent.as_ref().map(SessionId::as_str),
                        &self.header.created_at,
                        &title,
                        &dsh_session::project_of(std::path::Path::new(&self.header.cwd)),
                    ],
                )
                .await
        }
        .map_err(failed)?;
        let leased: i64 = row.get(0);
        let revision: Option<i64> = row.get(1);
        if leased == 0 {
            let holder = crate::lease::locked(store, id).await;
            return Err(self.poison(format!(
                "its writer's lease was taken over ({holder}); what it had not stored is not \
                 stored, and it accepts nothing more"
            )));
        }
        if revision.is_none() && !self.stored_already(store, &stored, &bytes).await? {
            return Err(match stored.materialized {
                false => PersistenceError::AlreadyExists {
                    id: id.clone(),
                    location: store.location(id),
                },
                true => self.poison(format!(
                    "the stored log no longer ends where this writer left it ({} bytes)",
                    stored.bytes
                )),
            });
        }
        stored.materialized = true;
        stored.bytes += len;
        self.buffer.lock().batches.drain(..taken);
        Ok(())
    }

    /// Whether `bytes` are already stored where this write would put them: an earlier
    /// attempt committed, and its answer was lost with its connection.
    async fn stored_already(
        &self,
        store: &Store,
        stored: &Stored,
        bytes: &[u8],
    ) -> Result<bool, PersistenceError> {
        let id = &self.header.id;
        let op = "checking an earlier write";
        let client = store.client(Some(id), op).await?;
        let row = client
            .query_opt(
                "SELECT s.bytes, c.records FROM dsh_sessions s
                   JOIN dsh_chunks c ON c.session_id = s.id AND c.start_byte = $2
                  WHERE s.id = $1",
                &[&id.as_str(), &stored.bytes],
            )
            .await
            .map_err(|e| io(Some(id), &store.shown, op, e))?;
        Ok(row.is_some_and(|row| {
            row.get::<_, i64>(0) == stored.bytes + bytes.len() as i64
                && row.get::<_, Vec<u8>>(1) == bytes
        }))
    }
}
