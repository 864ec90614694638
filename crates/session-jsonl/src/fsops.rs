//! Every file-system call that can fail mid-write goes through `FsOps`, so tests can
//! inject failures and stalls into exactly the calls the durability rules are about.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The file-system operations of the write path.
pub trait FsOps: Send + Sync + 'static {
    /// Writes all of `bytes` at the end of `file` (opened in append mode).
    fn write(&self, file: &File, bytes: &[u8]) -> io::Result<()> {
        let mut file = file;
        file.write_all(bytes)
    }
    /// `fdatasync`.
    fn sync_data(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }
    /// `fsync`.
    fn sync_all(&self, file: &File) -> io::Result<()> {
        file.sync_all()
    }
    /// Truncates `file` to `len`.
    fn set_len(&self, file: &File, len: u64) -> io::Result<()> {
        file.set_len(len)
    }
    /// Links `to` to `from`'s inode; fails if `to` exists.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }
    /// `fsync` of a directory, making entries created in it durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// The real file system.
pub struct RealFs;

impl FsOps for RealFs {}
