//! `FsLocalPlugin`: provides the local disk as `dyn FileAccess` on its scope.

use std::sync::Arc;

use async_trait::async_trait;
use dsh_fs::FileAccess;
use dsh_kernel::{BoxError, Plugin, Scope};

use crate::config::LocalFilesConfig;
use crate::files::LocalFiles;

/// The plugin named `fs-local`: the file access tools use when the caller attached none of
/// its own (an editor's).
#[derive(Clone, Debug, Default)]
pub struct FsLocalPlugin {
    config: LocalFilesConfig,
}

impl FsLocalPlugin {
    /// A plugin providing files read and written as `config` says.
    pub fn new(config: LocalFilesConfig) -> FsLocalPlugin {
        FsLocalPlugin { config }
    }
}

#[async_trait]
impl Plugin for FsLocalPlugin {
    fn name(&self) -> &str {
        "fs-local"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        let files: Arc<dyn FileAccess> = Arc::new(LocalFiles::new(self.config.clone()));
        scope.provide::<dyn FileAccess>(files)?;
        Ok(())
    }
}
