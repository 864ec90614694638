//! The PostgreSQL provider: the sessions this instance has open, and `SessionPersistence`
//! over them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use dsh_kernel::CancellationToken;
use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, LoadedSession, Origin, PersistenceError, SessionEvent,
    SessionHeader, SessionId, SessionListing, SessionLocation, SessionPersistence, SessionSummary,
    SkippedLog, check_writable, normalize_cwd,
};
use parking_lot::Mutex;

use crate::config::PostgresConfig;
use crate::lease;
use crate::read::{Mode, decode_header, raw, read};
use crate::store::{Store, io};
use crate::write::Open;

/// Session logs in PostgreSQL.
pub struct PostgresPersistence {
    store: Arc<Store>,
    open: Mutex<HashMap<SessionId, Arc<Open>>>,
    closed: AtomicBool,
    /// Stops the lease renewal.
    renewing: CancellationToken,
}

impl PostgresPersistence {
    /// Connects, creates or migrates dsh's tables, and starts renewing this instance's
    /// leases. A database that cannot be reached, or whose schema a newer dsh migrated, is
    /// an error saying so.
    pub async fn connect(
        config: PostgresConfig,
    ) -> Result<Arc<PostgresPersistence>, PersistenceError> {
        let connected = crate::connect::pool(&config)?;
        crate::schema::migrate(&connected.pool, &config.schema, &connected.shown).await?;
        let store = Arc::new(Store {
            pool: connected.pool,
            shown: connected.shown,
            holder: format!(
                "{}:{}:{}",
                config.host,
                std::process::id(),
                uuid::Uuid::now_v7()
            ),
            host: config.host,
            ttl: config.lease_ttl,
            window: config.write_window,
        });
        let renewing = CancellationToken::new();
        tokio::spawn(renew(store.clone(), renewing.clone()));
        Ok(Arc::new(PostgresPersistence {
            store,
            open: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            renewing,
        }))
    }

    /// The database as messages name it (`postgres://user@host:port/db`).
    pub fn shown(&self) -> &str {
        &self.store.shown
    }

    /// The sessions this instance has open.
    pub fn open_sessions(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self.open.lock().keys().cloned().collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids
    }

    fn check_open(&self) -> Result<(), PersistenceError> {
        match self.closed.load(Ordering::SeqCst) {
            true => Err(PersistenceError::Closed),
            false => Ok(()),
        }
    }

    fn get(&self, id: &SessionId) -> Result<Arc<Open>, PersistenceError> {
        self.check_open()?;
        self.open
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| PersistenceError::NotOpen { id: id.clone() })
    }

    /// Stores what `open` accepted, in a task of its own: a caller that stops waiting (a
    /// cancelled turn) does not cut a write off half-way.
    async fn write(&self, open: Arc<Open>) -> Result<(), PersistenceError> {
        let store = self.store.clone();
        let id = open.header.id.clone();
        tokio::spawn(async move { open.write(&store).await })
            .await
            .map_err(|e| PersistenceError::TaskFailed {
                id: Some(id),
                op: "flush",
                panicked: e.is_panic(),
            })?
    }

    async fn read(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
        mode: Mode,
    ) -> Result<LoadedSession, PersistenceError> {
        self.check_open()?;
        if mode == Mode::Load && self.open.lock().contains_key(id) {
            return Err(PersistenceError::Live { id: id.clone() });
        }
        match mode {
            Mode::Inspect => match raw(&self.store, id).await? {
                Some(stored) => read(&self.store, id, stored, known, None).await,
                None => Err(PersistenceError::NotFound { id: id.clone() }),
            },
            Mode::Load => {
                // A lease is taken only for what is stored; the log is read under it.
                if stored_state(&self.store, id).await?.is_none() {
                    return Err(PersistenceError::NotFound { id: id.clone() });
                }
                let token = lease::take(&self.store, id).await?;
                let read = match raw(&self.store, id).await {
                    Ok(Some(stored)) => read(&self.store, id, stored, known, Some(token)).await,
                    Ok(None) => Err(PersistenceError::NotFound { id: id.clone() }),
                    Err(e) => Err(e),
                };
                lease::release(&self.store, id, false).await?;
                read
            }
        }
    }
}

impl Drop for PostgresPersistence {
    fn drop(&mut self) {
        // An instance dropped without shutdown (its process going away) renews nothing more.
        self.renewing.cancel();
    }
}

/// Renews the instance's leases a third of their life before they would expire, until
/// `stop`; a renewal that fails is tried again at the next tick.
async fn renew(store: Arc<Store>, stop: CancellationToken) {
    let period = store.ttl / 3;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(period) => {}
        }
        if lease::renew(&store.pool, &store.holder, store.ttl_secs())
            .await
            .is_none()
        {
            tracing::warn!(database = %store.shown, "the session leases were not renewed");
        }
    }
}

#[async_trait]
impl SessionPersistence for PostgresPersistence {
    fn name(&self) -> &'static str {
        crate::NAME
    }

    async fn create(&self, header: &SessionHeader, origin: Origin) -> Result<(), PersistenceError> {
        self.check_open()?;
        let id = &header.id;
        check_writable(header)?;
        if self.open.lock().contains_key(id) {
            return Err(match origin {
                Origin::New => PersistenceError::AlreadyExists {
                    id: id.clone(),
                    location: self.store.location(id),
                },
                Origin::Resume { .. } => PersistenceError::Live { id: id.clone() },
            });
        }
        let stored = stored_state(&self.store, id).await?;
        let open = match origin {
            Origin::New => {
                if stored.is_some() {
                    return Err(PersistenceError::AlreadyExists {
                        id: id.clone(),
                        location: self.store.location(id),
                    });
                }
                let token = lease::take(&self.store, id).await?;
                Open::new(header.clone(), token)
            }
            Origin::Resume { next_seq, revision } => {
                if stored.is_none() {
                    return Err(PersistenceError::NotFound { id: id.clone() });
                }
                let token = lease::take(&self.store, id).await?;
                // Checked under the lease: nobody writes between this and the first write.
                let checked = match stored_state(&self.store, id).await {
                    Ok(Some((at, bytes))) if at.to_string() == revision.0 => Ok(bytes),
                    Ok(Some(_)) => Err(PersistenceError::Conflict {
                        id: id.clone(),
                        location: self.store.location(id),
                        reason: "the stored log changed since it was loaded; load it again".into(),
                    }),
                    Ok(None) => Err(PersistenceError::NotFound { id: id.clone() }),
                    Err(e) => Err(e),
                };
                let bytes = match checked {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        lease::release(&self.store, id, false).await?;
                        return Err(e);
                    }
                };
                Open::resumed(header.clone(), token, next_seq, Some(bytes))
            }
        };
        self.open.lock().insert(id.clone(), Arc::new(open));
        Ok(())
    }

    async fn append(
        &self,
        id: &SessionId,
        events: &[Arc<SessionEvent>],
    ) -> Result<(), PersistenceError> {
        let open = self.get(id)?;
        if let Some(poisoned) = open.poisoned() {
            return Err(poisoned);
        }
        if open.accept(events)? {
            // Write-behind: what is not flushed is stored within the window all the same.
            let (store, open) = (self.store.clone(), open.clone());
            tokio::spawn(async move {
                tokio::time::sleep(store.window).await;
                if let Err(err) = open.write(&store).await {
                    tracing::debug!("a write-behind failed (the next flush reports it): {err}");
                }
            });
        }
        Ok(())
    }

    async fn flush(&self, id: &SessionId) -> Result<(), PersistenceError> {
        let open = self.get(id)?;
        self.write(open).await
    }

    async fn close(&self, id: &SessionId, intent: CloseIntent) -> Result<(), PersistenceError> {
        self.check_open()?;
        let Some(open) = self.open.lock().get(id).cloned() else {
            return Ok(());
        };
        let (written, forget) = match intent {
            CloseIntent::Abandon if !open.abandon().await => (Ok(()), true),
            CloseIntent::Abandon | CloseIntent::Flush => {
                let written = self.write(open.clone()).await;
                (written, !open.materialized().await)
            }
        };
        self.open.lock().remove(id);
        let released = lease::release(&self.store, id, forget).await;
        written.and(released)
    }

    async fn load(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError> {
        self.read(id, known, Mode::Load).await
    }

    async fn inspect(
        &self,
        id: &SessionId,
        known: &EventVocabulary,
    ) -> Result<LoadedSession, PersistenceError> {
        self.read(id, known, Mode::Inspect).await
    }

    async fn header(&self, id: &SessionId) -> Result<Option<SessionHeader>, PersistenceError> {
        self.check_open()?;
        if let Some(open) = self.open.lock().get(id) {
            return Ok(Some(open.header.clone()));
        }
        let op = "reading the session's header";
        let client = self.store.client(Some(id), op).await?;
        let row = client
            .query_opt(
                "SELECT header FROM dsh_sessions WHERE id = $1",
                &[&id.as_str()],
            )
            .await
            .map_err(|e| io(Some(id), &self.store.shown, op, e))?;
        match row {
            Some(row) => decode_header(&self.store, id, &row.get::<_, Vec<u8>>(0)).map(Some),
            None => Ok(None),
        }
    }

    async fn list(&self, query: &ListQuery) -> Result<SessionListing, PersistenceError> {
        self.check_open()?;
        let cwd = match &query.cwd {
            Some(cwd) => Some(
                normalize_cwd(cwd).map_err(|source| PersistenceError::InvalidQuery { source })?,
            ),
            None => None,
        };
        let op = "listing the sessions";
        let client = self.store.client(None, op).await?;
        let rows = client
            .query(
                "SELECT id, header, updated_at, title FROM dsh_sessions
                  WHERE ($1::text IS NULL OR cwd = $1) AND ($2::text IS NULL OR project = $2)
                  ORDER BY updated_at DESC, id",
                &[&cwd, &query.project],
            )
            .await
            .map_err(|e| io(None, &self.store.shown, op, e))?;
        let mut listing = SessionListing::default();
        for row in rows {
            let id: String = row.get(0);
            let location = SessionLocation {
                provider: crate::NAME,
                display: format!("{} session {id}", self.store.shown),
                path: None,
            };
            let header = SessionId::parse(&id)
                .map_err(|e| e.to_string())
                .and_then(|id| {
                    decode_header(&self.store, &id, &row.get::<_, Vec<u8>>(1))
                        .map_err(|e| e.to_string())
                });
            match header {
                Ok(header) => listing.sessions.push(SessionSummary {
                    header,
                    location,
                    updated_at: row.get(2),
                    title: row.get(3),
                }),
                Err(reason) => listing.skipped.push(SkippedLog { location, reason }),
            }
        }
        Ok(listing)
    }

    async fn locate(&self, id: &SessionId) -> Result<Option<SessionLocation>, PersistenceError> {
        self.check_open()?;
        if self.open.lock().contains_key(id) {
            return Ok(Some(self.store.location(id)));
        }
        Ok(stored_state(&self.store, id)
            .await?
            .map(|_| self.store.location(id)))
    }

    async fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.check_open()?;
        if self.open.lock().contains_key(id) {
            return Err(PersistenceError::Live { id: id.clone() });
        }
        if stored_state(&self.store, id).await?.is_none() {
            return Err(PersistenceError::NotFound { id: id.clone() });
        }
        lease::take(&self.store, id).await?;
        let op = "deleting the session";
        let deleted = match self.store.client(Some(id), op).await {
            Ok(client) => client
                .execute("DELETE FROM dsh_sessions WHERE id = $1", &[&id.as_str()])
                .await
                .map_err(|e| io(Some(id), &self.store.shown, op, e)),
            Err(e) => Err(e),
        };
        // Whatever happened, the lease is given up; its row goes only with the session, or a
        // token of the session's could come round again.
        lease::release(&self.store, id, matches!(deleted, Ok(1..))).await?;
        match deleted? {
            0 => Err(PersistenceError::NotFound { id: id.clone() }),
            _ => Ok(()),
        }
    }

    async fn shutdown(&self) -> Result<(), PersistenceError> {
        if self.closed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let ids: Vec<SessionId> = self.open.lock().keys().cloned().collect();
        let mut failures = Vec::new();
        for id in ids {
            if let Err(err) = self.close(&id, CloseIntent::Flush).await {
                failures.push((id, err));
            }
        }
        self.closed.store(true, Ordering::SeqCst);
        self.renewing.cancel();
        self.open.lock().clear();
        match failures.is_empty() {
            true => Ok(()),
            false => Err(PersistenceError::Shutdown { failures }),
        }
    }
}

/// The stored revision and record bytes of `id`, when it is stored.
async fn stored_state(
    store: &Store,
    id: &SessionId,
) -> Result<Option<(i64, i64)>, PersistenceError> {
    let op = "looking the session up";
    let failed = |e| io(Some(id), &store.shown, op, e);
    let client = store.client(Some(id), op).await?;
    let statement = client
        .prepare_cached("SELECT revision, bytes FROM dsh_sessions WHERE id = $1")
        .await
        .map_err(failed)?;
    let row = client
        .query_opt(&statement, &[&id.as_str()])
        .await
        .map_err(failed)?;
    Ok(row.map(|row| (row.get(0), row.get(1))))
}
