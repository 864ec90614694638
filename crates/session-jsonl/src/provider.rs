//! The JSONL provider: the sessions it has open, and `SessionPersistence` over them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use dsh_session::{
    CloseIntent, EventVocabulary, ListQuery, LoadedSession, Origin, PersistenceError, SessionEvent,
    SessionHeader, SessionId, SessionListing, SessionLocation, SessionPersistence, check_writable,
    normalize_cwd,
};
use parking_lot::Mutex;

use crate::config::JsonlConfig;
use crate::fsops::{FsOps, RealFs};
use crate::load::Mode;
use crate::open::{Ctx, Open, Trigger, location, on_pool};
use crate::resume::{read_header_only, resume_file};
use crate::{layout, list, load};

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
        let owned = id.clone();
        let known = known.snapshot();
        let op = match mode {
            Mode::Load => "load",
            Mode::Inspect => "inspect",
        };
        on_pool(Some(id), op, move || {
            load::read(&*fs, &owned, &path, &known, mode)
        })
        .await?
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
        check_writable(header)?;
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
        let owned = id.clone();
        on_pool(Some(id), "header", move || read_header_only(&owned, &path))
            .await?
            .map(Some)
    }

    async fn list(&self, query: &ListQuery) -> Result<SessionListing, PersistenceError> {
        self.check_open()?;
        let root = self.ctx.root.clone();
        let cwd = match &query.cwd {
            Some(cwd) => Some(
                normalize_cwd(cwd).map_err(|source| PersistenceError::InvalidQuery { source })?,
            ),
            None => None,
        };
        let project = query.project.clone();
        on_pool(None, "list", move || {
            let mut listing = list::list(&root, cwd.as_deref());
            if let Some(project) = project {
                // A project is the same for every session of one directory: asked once each.
                let mut of: std::collections::HashMap<String, String> = Default::default();
                listing.sessions.retain(|s| {
                    let cwd = &s.header.cwd;
                    of.entry(cwd.clone())
                        .or_insert_with(|| dsh_session::project_of(std::path::Path::new(cwd)))
                        == &project
                });
            }
            listing
        })
        .await
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
        let at = location(&path);
        let removed = on_pool(Some(id), "delete", move || -> std::io::Result<bool> {
            let file = std::fs::File::open(&path)?;
            if file.try_lock().is_err() {
                return Ok(false);
            }
            std::fs::remove_file(&path)?;
            if let Some(dir) = path.parent() {
                fs.sync_dir(dir)?;
            }
            Ok(true)
        })
        .await?;
        match removed {
            Ok(true) => Ok(()),
            Ok(false) => Err(PersistenceError::Locked {
                id: id.clone(),
                location: at,
            }),
            Err(source) => Err(PersistenceError::Io {
                id: Some(id.clone()),
                location: at.display,
                op: "delete",
                source,
            }),
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
        self.open.lock().clear();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(PersistenceError::Shutdown { failures })
        }
    }
}
