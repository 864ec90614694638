//! Seam role: provider of dsh_session::SessionPersistence — durable JSONL files, the embedded
//! default.
//!
//! One file per session at `<root>/<project>/<id>.jsonl`: a header line, then one event per
//! line in the envelope encoding of `dsh-session`.
//!
//! Invariants:
//! - nothing touches disk before the first write of a session with at least one event;
//! - `append` never waits for disk; a write-behind timer (default 200 ms) batches events, and
//!   `flush` is the barrier: one write and one `fdatasync`;
//! - the first write publishes a synced temp file with a no-overwrite hard link, so a crash
//!   leaves no file or a complete header plus first batch;
//! - a failed write is truncated back to the last durable length and reported at the next
//!   flush, never dropped; a failed rollback poisons the session;
//! - one writer per session across processes (an advisory lock), released by the OS even on
//!   SIGKILL;
//! - a cold load repairs only a torn tail after the last completed turn; damage before it is
//!   an error naming file and line, and the file is left untouched.
#![deny(missing_docs)]

mod fsops;
mod header;
mod layout;
mod list;
mod load;
mod open;
mod scan;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Scope};
use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, LoadedSession, Origin, PersistenceError,
    SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, SessionId, SessionListing,
    SessionLocation, SessionPersistence, normalize_cwd,
};
#[cfg(feature = "fault-injection")]
pub use fsops::{FsOps, RealFs};
#[cfg(not(feature = "fault-injection"))]
use fsops::{FsOps, RealFs};
use parking_lot::Mutex;

use crate::load::Mode;
use crate::open::{Ctx, Open, Trigger, blocking, location};

/// Configuration of the JSONL provider.
#[derive(Clone, Debug)]
pub struct JsonlConfig {
    /// The directory holding one directory per project.
    pub root: PathBuf,
    /// How long appended events wait before a background write (0..=60 s).
    pub write_window: Duration,
    /// A buffer this large (≥ 64 KiB) is written at once.
    pub batch_max_bytes: usize,
}

impl JsonlConfig {
    /// The defaults: a 200 ms window and 8 MiB batches.
    pub fn new(root: impl Into<PathBuf>) -> JsonlConfig {
        JsonlConfig {
            root: root.into(),
            write_window: Duration::from_millis(200),
            batch_max_bytes: 8 * 1024 * 1024,
        }
    }
}

/// The JSONL provider.
pub struct JsonlPersistence {
    ctx: Arc<Ctx>,
    open: Mutex<HashMap<SessionId, Arc<Open>>>,
    closed: AtomicBool,
}

impl JsonlPersistence {
    /// Validates the configuration and resolves the root; creates nothing.
    pub fn new(config: JsonlConfig) -> Result<Arc<JsonlPersistence>, PersistenceError> {
        JsonlPersistence::build(config, Arc::new(RealFs))
    }

    /// Like [`JsonlPersistence::new`], with the file-system calls of the write path going
    /// through `fs` (failure injection in tests).
    #[cfg(feature = "fault-injection")]
    pub fn with_fs(
        config: JsonlConfig,
        fs: Arc<dyn FsOps>,
    ) -> Result<Arc<JsonlPersistence>, PersistenceError> {
        JsonlPersistence::build(config, fs)
    }

    fn build(
        config: JsonlConfig,
        fs: Arc<dyn FsOps>,
    ) -> Result<Arc<JsonlPersistence>, PersistenceError> {
        let bad = |reason: String| Err(PersistenceError::Config { reason });
        if config.write_window > Duration::from_secs(60) {
            return bad(format!(
                "write_window {:?} is over 60 s",
                config.write_window
            ));
        }
        if config.batch_max_bytes < 64 * 1024 {
            return bad(format!(
                "batch_max_bytes {} is under 64 KiB",
                config.batch_max_bytes
            ));
        }
        let root = std::path::absolute(&config.root).map_err(|e| PersistenceError::Config {
            reason: format!("{}: {e}", config.root.display()),
        })?;
        if root.exists() && !root.is_dir() {
            return bad(format!("{} exists and is not a directory", root.display()));
        }
        remove_stale_temps(&root);
        Ok(Arc::new(JsonlPersistence {
            ctx: Arc::new(Ctx {
                fs,
                root,
                window: config.write_window,
                batch_max: config.batch_max_bytes,
            }),
            open: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        }))
    }

    /// The sessions this instance has open (created or resumed, not yet closed).
    pub fn open_sessions(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self.open.lock().keys().cloned().collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids
    }

    fn check_open(&self) -> Result<(), PersistenceError> {
        if self.closed.load(Ordering::SeqCst) {
            Err(PersistenceError::Closed)
        } else {
            Ok(())
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

    fn paths(&self, header: &SessionHeader) -> (PathBuf, PathBuf) {
        let dir = self.ctx.root.join(layout::project_dir(&header.cwd));
        let path = dir.join(layout::file_name(header.id.as_str()));
        (dir, path)
    }

    fn spawn_write(&self, open: Arc<Open>, delay: Option<Duration>) {
        let ctx = self.ctx.clone();
        tokio::spawn(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
                open.timer_fired();
            }
            // A failure is kept buffered and reported by the next flush.
            let _ = open.write(&ctx).await;
        });
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
        let path = list::find_one(&self.ctx.root, id)?
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        let fs = self.ctx.fs.clone();
        let id = id.clone();
        let known = known.snapshot();
        tokio::task::spawn_blocking(move || load::read(&*fs, &id, &path, &known, mode))
            .await
            .map_err(|e| PersistenceError::Config {
                reason: format!("load task failed: {e}"),
            })?
    }
}

fn remove_stale_temps(root: &std::path::Path) {
    let day = Duration::from_secs(24 * 3600);
    for dir in list::projects(root).unwrap_or_default() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let old = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > day);
            if name.starts_with('.') && name.ends_with(".tmp") && old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[async_trait]
impl SessionPersistence for JsonlPersistence {
    fn name(&self) -> &'static str {
        "jsonl"
    }

    async fn create(&self, header: &SessionHeader, origin: Origin) -> Result<(), PersistenceError> {
        self.check_open()?;
        let id = &header.id;
        if header.version != SESSION_FORMAT_VERSION
            || normalize_cwd(&header.cwd).ok().as_deref() != Some(header.cwd.as_str())
        {
            return Err(PersistenceError::InvalidHeader {
                id: id.clone(),
                reason:
                    "the header must be of the current version with an absolute, normalized cwd"
                        .into(),
            });
        }
        let (dir, path) = self.paths(header);
        match origin {
            Origin::New => {
                if let Some(open) = self.open.lock().get(id) {
                    return Err(PersistenceError::AlreadyExists {
                        id: id.clone(),
                        location: open.location(),
                    });
                }
                if let Some(existing) = list::find(&self.ctx.root, id)?.first() {
                    return Err(PersistenceError::AlreadyExists {
                        id: id.clone(),
                        location: location(existing),
                    });
                }
                let open = Arc::new(Open::new(header.clone(), dir, path));
                self.open.lock().insert(id.clone(), open);
                Ok(())
            }
            Origin::Resume { next_seq, revision } => {
                if self.open.lock().contains_key(id) {
                    return Err(PersistenceError::Live { id: id.clone() });
                }
                let stored = list::find_one(&self.ctx.root, id)?
                    .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
                let (file, len) = resume_file(id, &stored, header, &revision).await?;
                let open = Arc::new(Open::with_file(
                    header.clone(),
                    dir,
                    stored,
                    Some(file),
                    len,
                    next_seq,
                ));
                self.open.lock().insert(id.clone(), open);
                Ok(())
            }
        }
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
        match open.accept(events, self.ctx.batch_max)? {
            Trigger::Nothing => {}
            Trigger::ArmTimer => self.spawn_write(open, Some(self.ctx.window)),
            Trigger::WriteNow => self.spawn_write(open, None),
        }
        Ok(())
    }

    async fn flush(&self, id: &SessionId) -> Result<(), PersistenceError> {
        let open = self.get(id)?;
        open.write(&self.ctx).await
    }

    async fn close(&self, id: &SessionId, intent: CloseIntent) -> Result<(), PersistenceError> {
        self.check_open()?;
        let Some(open) = self.open.lock().get(id).cloned() else {
            return Ok(());
        };
        open.close(&self.ctx, intent == CloseIntent::Abandon)
            .await?;
        self.open.lock().remove(id);
        Ok(())
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
        let Some(path) = list::find_one(&self.ctx.root, id)? else {
            return Ok(None);
        };
        let id = id.clone();
        blocking(move || Ok(read_header_only(&id, &path)))
            .await
            .map_err(|e| PersistenceError::Config {
                reason: e.to_string(),
            })?
            .map(Some)
    }

    async fn list(&self, query: &ListQuery) -> Result<SessionListing, PersistenceError> {
        self.check_open()?;
        let root = self.ctx.root.clone();
        let cwd = match &query.cwd {
            Some(cwd) => Some(normalize_cwd(cwd).map_err(|e| PersistenceError::Config {
                reason: e.to_string(),
            })?),
            None => None,
        };
        blocking(move || Ok(list::list(&root, cwd.as_deref())))
            .await
            .map_err(|e| PersistenceError::Config {
                reason: e.to_string(),
            })
    }

    async fn locate(&self, id: &SessionId) -> Result<Option<SessionLocation>, PersistenceError> {
        self.check_open()?;
        if let Some(open) = self.open.lock().get(id) {
            return Ok(Some(open.location()));
        }
        Ok(list::find_one(&self.ctx.root, id)?.map(|p| location(&p)))
    }

    async fn delete(&self, id: &SessionId) -> Result<(), PersistenceError> {
        self.check_open()?;
        if self.open.lock().contains_key(id) {
            return Err(PersistenceError::Live { id: id.clone() });
        }
        let path = list::find_one(&self.ctx.root, id)?
            .ok_or_else(|| PersistenceError::NotFound { id: id.clone() })?;
        let fs = self.ctx.fs.clone();
        let id2 = id.clone();
        blocking(move || {
            let file = std::fs::File::open(&path)?;
            if file.try_lock().is_err() {
                return Ok(Err(PersistenceError::Locked {
                    id: id2,
                    location: location(&path),
                }));
            }
            std::fs::remove_file(&path)?;
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir)?;
            }
            Ok(Ok(()))
        })
        .await
        .map_err(|e| PersistenceError::Io {
            id: Some(id.clone()),
            location: String::new(),
            op: "delete",
            source: e,
        })?
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
        self.open.lock().clear();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(PersistenceError::Shutdown { failures })
        }
    }
}

fn read_header_only(
    id: &SessionId,
    path: &std::path::Path,
) -> Result<SessionHeader, PersistenceError> {
    let file = std::fs::File::open(path).map_err(|e| PersistenceError::Io {
        id: Some(id.clone()),
        location: path.display().to_string(),
        op: "open",
        source: e,
    })?;
    let mut reader = std::io::BufReader::new(&file);
    load::read_header(id, path, &mut reader).map(|(h, _)| h)
}

/// Opens a stored log for appending after checking it is the one the caller loaded.
async fn resume_file(
    id: &SessionId,
    path: &std::path::Path,
    header: &SessionHeader,
    revision: &dsh_session::StoreRevision,
) -> Result<(std::fs::File, u64), PersistenceError> {
    let (id, path, header, revision) = (
        id.clone(),
        path.to_path_buf(),
        header.clone(),
        revision.clone(),
    );
    let id2 = id.clone();
    let path2 = path.clone();
    blocking(move || {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)?;
        if file.try_lock().is_err() {
            return Ok(Err(PersistenceError::Locked {
                id,
                location: location(&path),
            }));
        }
        let stored = {
            let mut reader = std::io::BufReader::new(&file);
            load::read_header(&id, &path, &mut reader)
        };
        let conflict = |reason: &str| PersistenceError::Conflict {
            id: id.clone(),
            location: location(&path),
            reason: reason.into(),
        };
        match stored {
            Err(err) => return Ok(Err(err)),
            Ok((stored, _)) if stored != header => {
                return Ok(Err(conflict(
                    "the stored header differs from the session's",
                )));
            }
            Ok(_) => {}
        }
        if load::revision(&file)? != revision {
            return Ok(Err(conflict("log changed since it was loaded")));
        }
        let len = file.metadata()?.len();
        Ok(Ok((file, len)))
    })
    .await
    .map_err(|e| PersistenceError::Io {
        id: Some(id2),
        location: path2.display().to_string(),
        op: "resume",
        source: e,
    })?
}

/// Why the JSONL plugin refused to unload: sessions bound to its instance are still open.
#[derive(Debug, thiserror::Error)]
#[error(
    "{count} session(s) still open in the JSONL provider ({ids}); detach them before unloading it"
)]
pub struct StillOpen {
    /// The open sessions' ids, comma-separated.
    pub ids: String,
    /// How many are open.
    pub count: usize,
}

/// Provides `dyn SessionPersistence` backed by JSONL files, and shuts it down (flushing every
/// open session) when its scope is disposed.
///
/// The instance is bound to every session it has open (the persistence bridge keeps it per
/// session), so the plugin refuses to be unloaded or reloaded while any is open: detach them
/// first. Shutdown is not refused; it flushes and closes what is still open.
pub struct JsonlPlugin {
    /// The provider's configuration.
    pub config: JsonlConfig,
}

#[async_trait]
impl Plugin for JsonlPlugin {
    fn name(&self) -> &str {
        "session-jsonl"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let persistence = JsonlPersistence::new(self.config.clone())?;
        scope.provide::<dyn SessionPersistence>(persistence.clone())?;
        let watched = Arc::downgrade(&persistence);
        scope.add_unload_check(move || {
            let open = watched
                .upgrade()
                .map(|p| p.open_sessions())
                .unwrap_or_default();
            if open.is_empty() {
                return Ok(());
            }
            let ids: Vec<&str> = open.iter().map(SessionId::as_str).collect();
            Err(Box::new(StillOpen {
                ids: ids.join(", "),
                count: open.len(),
            }))
        })?;
        scope.add_disposer(move || async move { persistence.shutdown().await })?;
        Ok(())
    }
}
