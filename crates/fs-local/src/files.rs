//! [`LocalFiles`]: the provider's `FileAccess`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use dsh_fs::{FileAccess, FsError, TextFile, Version};

use crate::config::LocalFilesConfig;
use crate::ops::{RealOps, WriteOps};
use crate::read::read_stored;
use crate::write::write_checked;

/// Text files on the local disk.
#[derive(Clone)]
pub struct LocalFiles {
    config: LocalFilesConfig,
    ops: Arc<dyn WriteOps>,
}

impl LocalFiles {
    /// Files read and written as `config` says, on the real file system.
    pub fn new(config: LocalFilesConfig) -> LocalFiles {
        LocalFiles::with_ops(config, Arc::new(RealOps))
    }

    /// The same, with the write path's steps going through `ops` (tests inject failures).
    pub fn with_ops(config: LocalFilesConfig, ops: Arc<dyn WriteOps>) -> LocalFiles {
        LocalFiles { config, ops }
    }
}

/// Runs `work` on the blocking pool; a pool that is gone is reported against `path`.
async fn blocking<T: Send + 'static>(
    path: &Path,
    work: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|err| {
            Err(FsError::Other {
                path: path.into(),
                detail: format!("the file operation did not finish: {err}"),
            })
        })
}

#[async_trait]
impl FileAccess for LocalFiles {
    fn holder(&self) -> &str {
        "the local disk"
    }

    async fn read(&self, path: &Path) -> Result<TextFile, FsError> {
        let owned: PathBuf = path.into();
        let cap = self.config.read_cap;
        blocking(path, move || {
            let stored = read_stored(&owned, cap)?;
            let text = stored.shape.into_lf(stored.raw);
            let version = Version::of(&text);
            Ok(TextFile { text, version })
        })
        .await
    }

    async fn write(
        &self,
        path: &Path,
        text: &str,
        expected: Option<&Version>,
    ) -> Result<Version, FsError> {
        let owned: PathBuf = path.into();
        let text = text.to_owned();
        let expected = expected.cloned();
        let ops = self.ops.clone();
        let cap = self.config.read_cap;
        blocking(path, move || {
            write_checked(&*ops, &owned, &text, expected.as_ref(), cap)
        })
        .await
    }
}
