//! The atomic write: a temporary file beside the target, synced, renamed over it.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use dsh_fs::{FsError, Version, check_expected};

use crate::endings::Shape;
use crate::ops::WriteOps;
use crate::read::{io_error, read_stored};

/// Writes `text` at `path` if it still has the version `expected` (absent when `None`).
pub(crate) fn write_checked(
    ops: &dyn WriteOps,
    path: &Path,
    text: &str,
    expected: Option<&Version>,
    cap: u64,
) -> Result<Version, FsError> {
    // A symlink stays a symlink: the file it points to is the one replaced.
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(err) => return Err(io_error(path, &err)),
    };
    let current = match read_stored(&target, cap) {
        Ok(stored) => Some(stored),
        Err(FsError::NotFound { .. }) => None,
        Err(err) => return Err(err),
    };
    let now = current.as_ref().map(|stored| match stored.shape.crlf {
        true => Version::of(&stored.shape.to_lf(&stored.raw)),
        false => Version::of(&stored.raw),
    });
    check_expected(path, now.as_ref(), expected)?;
    let (content, mode) = match &current {
        None => (text.to_owned(), None),
        Some(stored) => {
            let mode = std::fs::metadata(&target)
                .map_err(|err| io_error(path, &err))?
                .permissions()
                .mode();
            (stored.shape.to_disk(text), Some(mode))
        }
    };
    if current.is_none()
        && let Some(parent) = target.parent()
    {
        std::fs::create_dir_all(parent).map_err(|err| io_error(parent, &err))?;
    }
    replace(ops, &target, &content, mode).map_err(|err| match err {
        FsError::Other { detail, .. } => FsError::Other {
            path: path.into(),
            detail,
        },
        other => other,
    })?;
    Ok(Version::of(&Shape::of(&content).to_lf(&content)))
}

/// Puts `content` at `target` through a temporary file, with `mode` (else the umask's
/// default); removes the temporary file on any failure.
fn replace(
    ops: &dyn WriteOps,
    target: &Path,
    content: &str,
    mode: Option<u32>,
) -> Result<(), FsError> {
    let dir = target.parent().unwrap_or(Path::new("/"));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.dsh-{:08x}.tmp", fastrand::u32(..)));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o666)
        .open(&temp)
        .map_err(|err| io_error(dir, &err))?;
    let guard = TempGuard(Some(temp.clone()));
    let step = |result: std::io::Result<()>| result.map_err(|err| io_error(target, &err));
    if let Some(mode) = mode {
        step(file.set_permissions(std::fs::Permissions::from_mode(mode)))?;
    }
    step(ops.write(&mut file, content.as_bytes()))?;
    step(ops.sync(&file))?;
    drop::<File>(file);
    step(ops.rename(&temp, target))?;
    guard.disarm();
    // The rename stands whether or not this succeeds; a failure only weakens durability.
    let _ = ops.sync_dir(dir);
    Ok(())
}

/// Removes the temporary file unless disarmed.
struct TempGuard(Option<PathBuf>);

impl TempGuard {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}
