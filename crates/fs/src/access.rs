//! The file access contract.

use std::path::Path;

use async_trait::async_trait;

use crate::error::FsError;
use crate::version::Version;

/// A text file as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextFile {
    /// The text, lines ending in `\n` (a provider that stores another line ending converts on
    /// the way in and back on the way out).
    pub text: String,
    /// What a write must expect to replace exactly this.
    pub version: Version,
}

/// Reads and writes whole text files. Implementations: the local disk, an editor.
#[async_trait]
pub trait FileAccess: Send + Sync + 'static {
    /// Who holds the files, for messages: "the local disk", "the editor".
    fn holder(&self) -> &str;

    /// The text of the file at the absolute `path`.
    async fn read(&self, path: &Path) -> Result<TextFile, FsError>;

    /// Replaces the file at the absolute `path` with `text`, if it still has the version
    /// `expected`; with `expected` `None`, creates it, and fails [`FsError::Stale`] when it
    /// exists. Returns the version of what now stands there.
    async fn write(
        &self,
        path: &Path,
        text: &str,
        expected: Option<&Version>,
    ) -> Result<Version, FsError>;
}
