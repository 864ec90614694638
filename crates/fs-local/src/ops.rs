//! Every call of the write path that can fail mid-write goes through [`WriteOps`], so tests
//! can fail exactly the step the atomicity rule is about.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The file-system steps of an atomic write.
pub trait WriteOps: Send + Sync + 'static {
    /// Writes all of `bytes` to the temporary `file`.
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }
    /// `fsync` of the temporary file.
    fn sync(&self, file: &File) -> io::Result<()> {
        file.sync_all()
    }
    /// Renames the temporary file over the target.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    /// `fsync` of the directory, making the rename durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// The real file system.
pub struct RealOps;

impl WriteOps for RealOps {}
