//! Reading a file whole, as text.

use std::io::{self, Read};
use std::path::Path;

use dsh_fs::FsError;

use crate::endings::Shape;

/// How many leading bytes are searched for a NUL, as git and ripgrep do to call a file binary.
const SNIFF: usize = 8 * 1024;

/// A file as stored: its text and shape.
pub(crate) struct Stored {
    pub raw: String,
    pub shape: Shape,
}

/// Reads `path` whole, refusing directories, files over `cap` and what is not text.
pub(crate) fn read_stored(path: &Path, cap: u64) -> Result<Stored, FsError> {
    let meta = std::fs::metadata(path).map_err(|err| io_error(path, &err))?;
    if meta.is_dir() {
        return Err(FsError::IsDirectory { path: path.into() });
    }
    // A FIFO would block the read forever and a device (/dev/zero) never ends.
    if !meta.is_file() {
        return Err(FsError::NotText {
            path: path.into(),
            why: "it is not a regular file (a device, FIFO or socket)".into(),
        });
    }
    if meta.len() > cap {
        return Err(FsError::TooLarge {
            path: path.into(),
            size: meta.len(),
            cap,
        });
    }
    // Never more than the cap plus one byte, however long the file turns out to be.
    let mut bytes = Vec::with_capacity(meta.len() as usize + 1);
    std::fs::File::open(path)
        .and_then(|file| file.take(cap + 1).read_to_end(&mut bytes))
        .map_err(|err| io_error(path, &err))?;
    // A file that grew past the cap between the two calls is refused too.
    if bytes.len() as u64 > cap {
        return Err(FsError::TooLarge {
            path: path.into(),
            size: bytes.len() as u64,
            cap,
        });
    }
    if bytes[..bytes.len().min(SNIFF)].contains(&0) {
        return Err(FsError::NotText {
            path: path.into(),
            why: "it has a NUL byte in its first 8 KiB".into(),
        });
    }
    let raw = String::from_utf8(bytes).map_err(|err| FsError::NotText {
        path: path.into(),
        why: format!("it is not UTF-8 at byte {}", err.utf8_error().valid_up_to()),
    })?;
    let shape = Shape::of(&raw);
    Ok(Stored { raw, shape })
}

/// The typed error for an I/O failure on `path`.
pub(crate) fn io_error(path: &Path, err: &io::Error) -> FsError {
    match err.kind() {
        io::ErrorKind::NotFound => FsError::NotFound { path: path.into() },
        io::ErrorKind::PermissionDenied => FsError::PermissionDenied {
            path: path.into(),
            detail: err.to_string(),
        },
        io::ErrorKind::IsADirectory => FsError::IsDirectory { path: path.into() },
        _ => FsError::Other {
            path: path.into(),
            detail: err.to_string(),
        },
    }
}
