//! The provider's settings.

/// How the local provider reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalFilesConfig {
    /// The largest file read whole, in bytes.
    pub read_cap: u64,
}

impl Default for LocalFilesConfig {
    fn default() -> LocalFilesConfig {
        LocalFilesConfig {
            read_cap: 2 * 1024 * 1024,
        }
    }
}
