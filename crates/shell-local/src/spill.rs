//! Spill files: the whole stream from offset 0, in a private per-executor directory, capped,
//! written before the next chunk is read so the pipe applies back-pressure.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use dsh_shell::SpillStop;
use tempfile::{TempDir, TempPath};

/// The executor's private directory, made on first use (mode 0700, unpredictable name) and
/// removed with it.
#[derive(Debug)]
pub(crate) struct SpillDir {
    root: PathBuf,
    dir: Mutex<Option<TempDir>>,
    closed: Mutex<bool>,
}

impl SpillDir {
    pub fn new(root: PathBuf) -> SpillDir {
        SpillDir {
            root,
            dir: Mutex::new(None),
            closed: Mutex::new(false),
        }
    }

    /// A new spill file: exclusive create, mode 0600, unpredictable name.
    pub fn create(&self) -> std::io::Result<(File, TempPath)> {
        let dir = self.path()?;
        let file = tempfile::Builder::new()
            .prefix("sh-")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(dir)?;
        Ok(file.into_parts())
    }

    /// The directory, made now when it does not exist yet.
    pub fn path(&self) -> std::io::Result<PathBuf> {
        if *self.closed.lock().unwrap_or_else(PoisonError::into_inner) {
            return Err(std::io::Error::other("the executor is disposed"));
        }
        let mut dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner);
        if dir.is_none() {
            let made = tempfile::Builder::new()
                .prefix("dsh-shell-")
                .tempdir_in(&self.root)?;
            // Explicitly, since a tempdir's mode follows the umask.
            std::fs::set_permissions(made.path(), std::fs::Permissions::from_mode(0o700))?;
            *dir = Some(made);
        }
        match dir.as_ref() {
            Some(dir) => Ok(dir.path().to_owned()),
            None => Err(std::io::Error::other("no spill directory")),
        }
    }

    /// The temporary directory of sandboxed commands, inside the spill directory (which they
    /// may write): their `TMPDIR`.
    pub fn sandbox_tmp(&self) -> std::io::Result<PathBuf> {
        let tmp = self.path()?.join("tmp");
        match std::fs::create_dir(&tmp) {
            Ok(()) => std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700))?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        Ok(tmp)
    }

    /// Removes the directory and every file left in it; later creates fail.
    pub fn close(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        let dir = self
            .dir
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(dir) = dir
            && let Err(error) = dir.close()
        {
            tracing::warn!(%error, "cannot remove the spill directory");
        }
    }
}

/// The supervisor's writing side of one spill file.
#[derive(Debug, Default)]
pub(crate) struct SpillWriter {
    file: Option<File>,
    pub written: u64,
    pub stop: Option<SpillStop>,
}

impl SpillWriter {
    /// Starts spilling with the stream so far; returns the path readers use.
    pub fn start(&mut self, dir: &SpillDir, head: &[u8], cap: u64) -> Option<TempPath> {
        match dir.create() {
            Ok((file, path)) => {
                self.file = Some(file);
                self.append(head, cap);
                Some(path)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot create a spill file; the task keeps its tail only");
                self.stop = Some(SpillStop::WriteFailed);
                None
            }
        }
    }

    /// Appends what fits under `cap`; stops for good on a failure or a refused byte.
    pub fn append(&mut self, data: &[u8], cap: u64) {
        if self.stop.is_some() {
            return;
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let room = usize::try_from(cap.saturating_sub(self.written)).unwrap_or(usize::MAX);
        let take = room.min(data.len());
        if let Err(error) = file.write_all(&data[..take]) {
            tracing::warn!(%error, "writing the spill file failed; it stops here");
            self.stop = Some(SpillStop::WriteFailed);
            self.file = None;
            return;
        }
        self.written += take as u64;
        if take < data.len() {
            self.stop = Some(SpillStop::CapReached);
            self.file = None;
        }
    }

    pub fn finish(&mut self) {
        self.file = None;
    }
}

/// Reads `[start, start + len)` of a spill file by path; `None` if it is gone.
pub(crate) fn read_at(path: &Path, start: u64, len: usize) -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).ok()?;
    let mut buf = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read_at(&mut buf[filled..], start + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    buf.truncate(filled);
    Some(buf)
}
