//! An open session's write path: an in-memory buffer that `append` fills
//! without waiting for disk, a write-behind timer, and one write at a time that either
//! materializes the file or appends to it, rolling back to the last durable length on failure.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh_session::{PersistenceError, SessionEvent, SessionHeader, SessionId, SessionLocation};
use parking_lot::Mutex;

use crate::fsops::FsOps;
use crate::index;
use dsh_session::log_format::header;

/// What every open session shares with its provider.
pub(crate) struct Ctx {
    pub(crate) fs: Arc<dyn FsOps>,
    pub(crate) root: PathBuf,
    pub(crate) window: Duration,
    pub(crate) batch_max: usize,
}

pub(crate) struct Open {
    pub(crate) header: SessionHeader,
    pub(crate) dir: PathBuf,
    pub(crate) path: PathBuf,
    buffer: Mutex<Buffer>,
    io: tokio::sync::Mutex<Io>,
    /// Set when a failed rollback poisoned the session; read by `append` without waiting for
    /// the I/O lock (which a write in progress holds).
    poisoned: Mutex<Option<String>>,
}

struct Buffer {
    pending: Vec<Arc<SessionEvent>>,
    bytes: usize,
    /// The seq the next accepted event must have.
    cursor: u64,
    timer_armed: bool,
    /// An early (size-triggered) write is already on its way; do not start another.
    write_scheduled: bool,
    /// `close` has begun: appends are refused, so none is accepted after its final write.
    closing: bool,
}

struct Io {
    file: Option<Arc<File>>,
    /// Length of the file known to be durable.
    durable: u64,
    /// The project directory still needs an fsync after a link.
    dir_pending: bool,
    sticky: Option<Sticky>,
    /// Inside a failure streak (one warning per streak).
    failing: bool,
    /// Closed: the file (and its lock) is released; a late timer writes nothing.
    closed: bool,
}

#[derive(Clone)]
enum Sticky {
    AlreadyExists,
    Poisoned(String),
}

/// What an accepted batch asks of the provider.
pub(crate) enum Trigger {
    Nothing,
    ArmTimer,
    WriteNow,
}

impl Open {
    /// A session opened by `create(New)`: nothing on disk yet.
    pub(crate) fn new(header: SessionHeader, dir: PathBuf, path: PathBuf) -> Open {
        Open::with_file(header, dir, path, None, 0, 0)
    }

    /// A session opened by `create(Resume)` on an existing, locked file.
    pub(crate) fn with_file(
        header: SessionHeader,
        dir: PathBuf,
        path: PathBuf,
        file: Option<File>,
        len: u64,
        cursor: u64,
    ) -> Open {
        Open {
            header,
            dir,
            path,
            buffer: Mutex::new(Buffer {
                pending: Vec::new(),
                bytes: 0,
                cursor,
                timer_armed: false,
                write_scheduled: false,
                closing: false,
            }),
            io: tokio::sync::Mutex::new(Io {
                file: file.map(Arc::new),
                durable: len,
                dir_pending: false,
                sticky: None,
                failing: false,
                closed: false,
            }),
            poisoned: Mutex::new(None),
        }
    }

    pub(crate) fn id(&self) -> &SessionId {
        &self.header.id
    }

    pub(crate) fn location(&self) -> SessionLocation {
        location(&self.path)
    }

    /// Accepts a contiguous batch into the buffer, or refuses all of it.
    pub(crate) fn accept(
        &self,
        events: &[Arc<SessionEvent>],
        batch_max: usize,
    ) -> Result<Trigger, PersistenceError> {
        let mut buffer = self.buffer.lock();
        if buffer.closing {
            return Err(PersistenceError::NotOpen {
                id: self.id().clone(),
            });
        }
        for (index, event) in events.iter().enumerate() {
            let expected = buffer.cursor + index as u64;
            if event.seq != expected {
                return Err(PersistenceError::SeqMismatch {
                    id: self.id().clone(),
                    expected,
                    got: event.seq,
                    index,
                });
            }
        }
        if events.is_empty() {
            return Ok(Trigger::Nothing);
        }
        buffer.cursor += events.len() as u64;
        buffer.bytes += events
            .iter()
            .map(|e| e.data.get().len() + 64)
            .sum::<usize>();
        buffer.pending.extend(events.iter().cloned());
        if buffer.bytes >= batch_max {
            if buffer.write_scheduled {
                return Ok(Trigger::Nothing);
            }
            buffer.write_scheduled = true;
            return Ok(Trigger::WriteNow);
        }
        if !buffer.timer_armed {
            buffer.timer_armed = true;
            return Ok(Trigger::ArmTimer);
        }
        Ok(Trigger::Nothing)
    }

    pub(crate) fn timer_fired(&self) {
        self.buffer.lock().timer_armed = false;
    }

    /// True when nothing was ever written and nothing is buffered to write.
    pub(crate) async fn is_materialized(&self) -> bool {
        self.io.lock().await.file.is_some()
    }

    /// Writes what is buffered, then releases the file and its lock. On a write failure the
    /// session stays open and the error is returned.
    pub(crate) async fn close(
        self: &Arc<Self>,
        ctx: &Arc<Ctx>,
        abandon: bool,
    ) -> Result<(), PersistenceError> {
        // From here on nothing more is accepted, so the final write holds every accepted event.
        self.buffer.lock().closing = true;
        if abandon && !self.is_materialized().await {
            self.drop_buffer();
        } else if let Err(err) = self.write(ctx).await {
            // The session stays open after a failed close, and takes appends again.
            self.buffer.lock().closing = false;
            return Err(err);
        }
        let mut io = self.io.lock().await;
        io.closed = true;
        io.file = None;
        Ok(())
    }

    pub(crate) fn drop_buffer(&self) {
        let mut buffer = self.buffer.lock();
        buffer.pending.clear();
        buffer.bytes = 0;
    }

    /// Writes everything buffered and makes it durable: the flush barrier. Concurrent callers
    /// queue on the I/O lock; a later one finds the buffer already written.
    ///
    /// The write runs on a task of its own: a caller that stops waiting (a cancelled turn
    /// dropping its barrier) cannot interrupt it between taking the buffer and recording what
    /// reached the disk, which would lose the batch and leave the file unaccounted for.
    pub(crate) async fn write(self: &Arc<Self>, ctx: &Arc<Ctx>) -> Result<(), PersistenceError> {
        let (open, ctx) = (self.clone(), ctx.clone());
        match tokio::spawn(async move { open.write_now(&ctx).await }).await {
            Ok(result) => result,
            Err(join) => Err(self.io_error("write", io::Error::other(join.to_string()))),
        }
    }

    async fn write_now(&self, ctx: &Arc<Ctx>) -> Result<(), PersistenceError> {
        let mut io = self.io.lock().await;
        if io.closed {
            return Ok(());
        }
        if let Some(sticky) = &io.sticky {
            return Err(self.sticky_error(sticky));
        }
        if io.dir_pending {
            let fs = ctx.fs.clone();
            let dir = self.dir.clone();
            on_pool(
                Some(self.id()),
                "fsync of the project directory",
                move || fs.sync_dir(&dir),
            )
            .await?
            .map_err(|e| self.io_error("fsync of the project directory", e))?;
            io.dir_pending = false;
        }
        let batch: Vec<Arc<SessionEvent>> = {
            let mut buffer = self.buffer.lock();
            buffer.bytes = 0;
            buffer.write_scheduled = false;
            std::mem::take(&mut buffer.pending)
        };
        if batch.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        for event in &batch {
            event.encode_into(&mut bytes);
            bytes.push(b'\n');
        }
        let first = io.file.is_none();
        // A title alone (a rename) is not activity: the log's time of last change, which
        // orders the listing and picks the session `-c` continues, stays where it was.
        let activity = batch
            .iter()
            .any(|event| event.kind.as_str() != dsh_session::SESSION_TITLE);
        let result = match io.file.clone() {
            Some(file) => {
                self.append_bytes(ctx, file, io.durable, bytes, activity)
                    .await
            }
            None => self.materialize(ctx, &mut io, bytes).await,
        };
        match result {
            Ok(len) => {
                io.durable = len;
                io.failing = false;
                let title = index::title_in(&batch);
                if first || title.is_some() {
                    self.index(io.file.clone(), title).await;
                }
                Ok(())
            }
            Err(err) if io.dir_pending && io.file.is_some() && io.durable > 0 => {
                if !io.failing {
                    tracing::warn!(session = %self.id(), "syncing the project directory failed: {err}");
                    io.failing = true;
                }
                Err(err)
            }
            Err(err) => {
                // Put the batch back in front of newer events, for the next flush to retry.
                let mut buffer = self.buffer.lock();
                let mut pending = batch;
                pending.append(&mut buffer.pending);
                buffer.pending = pending;
                if !io.failing {
                    tracing::warn!(session = %self.id(), "writing the session log failed: {err}");
                    io.failing = true;
                }
                if let PersistenceError::Poisoned { cause, .. } = &err {
                    io.sticky = Some(Sticky::Poisoned(cause.clone()));
                    *self.poisoned.lock() = Some(cause.clone());
                }
                if let PersistenceError::AlreadyExists { .. } = &err {
                    io.sticky = Some(Sticky::AlreadyExists);
                }
                Err(err)
            }
        }
    }

    /// Appends `bytes` and syncs; on failure truncates back to `durable` (or poisons). Without
    /// `activity` the file keeps its modification time.
    async fn append_bytes(
        &self,
        ctx: &Arc<Ctx>,
        file: Arc<File>,
        durable: u64,
        bytes: Vec<u8>,
        activity: bool,
    ) -> Result<u64, PersistenceError> {
        let fs = ctx.fs.clone();
        let len = bytes.len() as u64;
        let outcome = on_pool(Some(self.id()), "write", move || {
            let before = (!activity)
                .then(|| file.metadata().and_then(|m| m.modified()).ok())
                .flatten();
            let written = fs.write(&file, &bytes).and_then(|()| fs.sync_data(&file));
            if let (Some(before), Ok(())) = (before, &written) {
                // Best effort: a file system that refuses leaves the rename counted as activity.
                let _ = file.set_modified(before);
            }
            written.map_err(|err| {
                let rolled_back = fs.set_len(&file, durable).and_then(|()| fs.sync_all(&file));
                (err, rolled_back)
            })
        })
        .await?;
        match outcome {
            Ok(()) => Ok(durable + len),
            Err((err, Ok(()))) => Err(self.io_error("write", err)),
            Err((err, Err(rollback))) => Err(PersistenceError::Poisoned {
                id: self.id().clone(),
                cause: format!("write failed ({err}) and truncating back failed ({rollback})"),
            }),
        }
    }

    /// The first write: a synced temp file published by a no-overwrite hard link.
    async fn materialize(
        &self,
        ctx: &Arc<Ctx>,
        io: &mut Io,
        batch: Vec<u8>,
    ) -> Result<u64, PersistenceError> {
        let fs = ctx.fs.clone();
        let root = ctx.root.clone();
        let dir = self.dir.clone();
        let path = self.path.clone();
        let mut bytes = header::encode(&self.header);
        bytes.extend_from_slice(&batch);
        let len = bytes.len() as u64;
        let id = self.id().clone();
        let result = on_pool(
            Some(&id),
            "materialization",
            move || -> io::Result<(File, Option<io::Error>, bool)> {
                ensure_dir(&*fs, &root)?;
                ensure_dir(&*fs, &dir)?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let temp = dir.join(format!(".{name}.{:016x}.tmp", temp_suffix()));
                let file = OpenOptions::new()
                    .append(true)
                    .read(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&temp)?;
                let written = file
                    .try_lock()
                    .map_err(|e| io::Error::other(e.to_string()))
                    .and_then(|()| fs.write(&file, &bytes))
                    .and_then(|()| fs.sync_all(&file));
                if let Err(err) = written {
                    let _ = std::fs::remove_file(&temp);
                    return Err(err);
                }
                if let Err(err) = fs.hard_link(&temp, &path) {
                    let _ = std::fs::remove_file(&temp);
                    let exists = err.kind() == io::ErrorKind::AlreadyExists;
                    return if exists {
                        Ok((file, None, true))
                    } else {
                        Err(err)
                    };
                }
                // The link is published; only its directory entry may not be durable yet.
                let dir_failure = fs.sync_dir(&dir).err();
                let _ = std::fs::remove_file(&temp);
                Ok((file, dir_failure, false))
            },
        )
        .await?;
        match result {
            Err(err) => Err(self.io_error("materialization", err)),
            Ok((_, _, true)) => Err(PersistenceError::AlreadyExists {
                id: self.id().clone(),
                location: self.location(),
            }),
            Ok((file, dir_failure, false)) => {
                io.file = Some(Arc::new(file));
                match dir_failure {
                    None => Ok(len),
                    Some(err) => {
                        // The events are in the file: they are not re-queued (that would
                        // duplicate them), but this barrier fails and the next one retries
                        // the directory sync before it reports durability.
                        io.durable = len;
                        io.dir_pending = true;
                        Err(self.io_error("fsync of the project directory", err))
                    }
                }
            }
        }
    }

    /// Tells the directory's listing index about this log (its header, and `title` when a
    /// batch just set one). Best effort: the index is a cache the listing can rebuild.
    async fn index(&self, file: Option<Arc<File>>, title: Option<String>) {
        let Some(file) = file else { return };
        let dir = self.dir.clone();
        let line = index::Line {
            file: self
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ino: 0,
            len: 0,
            header: self.header.clone(),
            title,
        };
        let written = on_pool(Some(self.id()), "index", move || {
            let meta = file.metadata()?;
            let line = index::Line {
                ino: meta.ino(),
                len: meta.len(),
                ..line
            };
            index::append(&dir, &[line])
        })
        .await;
        let failure = match written {
            Ok(Ok(())) => return,
            Ok(Err(err)) => err.to_string(),
            Err(err) => err.to_string(),
        };
        tracing::debug!(session = %self.id(), "the listing index was not updated: {failure}");
    }

    fn sticky_error(&self, sticky: &Sticky) -> PersistenceError {
        match sticky {
            Sticky::AlreadyExists => PersistenceError::AlreadyExists {
                id: self.id().clone(),
                location: self.location(),
            },
            Sticky::Poisoned(cause) => PersistenceError::Poisoned {
                id: self.id().clone(),
                cause: cause.clone(),
            },
        }
    }

    /// The poisoning failure, if any: appends are refused then.
    pub(crate) fn poisoned(&self) -> Option<PersistenceError> {
        self.poisoned
            .lock()
            .clone()
            .map(|cause| PersistenceError::Poisoned {
                id: self.id().clone(),
                cause,
            })
    }

    fn io_error(&self, op: &'static str, source: io::Error) -> PersistenceError {
        PersistenceError::Io {
            id: Some(self.id().clone()),
            location: self.path.display().to_string(),
            op,
            source,
        }
    }
}

/// Creates `dir` and any missing ancestors (mode 0700), fsyncing the parent of each
/// directory created so every new entry is durable.
fn ensure_dir(fs: &dyn FsOps, dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at {
        if path.is_dir() {
            break;
        }
        missing.push(path);
        at = path.parent();
    }
    for path in missing.into_iter().rev() {
        match DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => continue,
            Err(e) => return Err(e),
        }
        if let Some(parent) = path.parent() {
            fs.sync_dir(parent)?;
        }
    }
    Ok(())
}

fn temp_suffix() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// The location of a log file.
pub(crate) fn location(path: &Path) -> SessionLocation {
    SessionLocation {
        provider: "jsonl",
        display: path.display().to_string(),
        path: Some(path.to_path_buf()),
    }
}

/// Runs `f` on the blocking pool; a task that does not finish (it panicked, or shutdown
/// cancelled it) is `TaskFailed` for `op`, never an I/O or configuration error.
pub(crate) async fn on_pool<T: Send + 'static>(
    id: Option<&SessionId>,
    op: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, PersistenceError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| PersistenceError::TaskFailed {
            id: id.cloned(),
            op,
            panicked: e.is_panic(),
        })
}
