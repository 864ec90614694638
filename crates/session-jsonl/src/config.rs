//! The provider's configuration.

use std::path::PathBuf;
use std::time::Duration;

/// Configuration of the JSONL provider.
#[derive(Clone, Debug)]
pub struct JsonlConfig {
    /// The directory holding one directory per project.
    pub root: PathBuf,
    /// How long appended events wait before a background write (0..=60 s).
    pub write_window: Duration,
    /// A buffer this large (≥ 64 KiB) is written at once.
    pub batch_max_bytes: usize,
}

impl JsonlConfig {
    /// The defaults: a 200 ms window and 8 MiB batches.
    pub fn new(root: impl Into<PathBuf>) -> JsonlConfig {
        JsonlConfig {
            root: root.into(),
            write_window: Duration::from_millis(200),
            batch_max_bytes: 8 * 1024 * 1024,
        }
    }
}
