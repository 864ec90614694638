//! The tools' limits.

use std::time::Duration;

/// Limits of the file tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFsConfig {
    /// Lines `read` returns when the model gives no limit.
    pub read_lines: usize,
    /// Characters of one line `read` shows before cutting it.
    pub line_chars: usize,
    /// Lines (or files, or counts) `grep` returns at most.
    pub grep_limit: usize,
    /// Paths `glob` returns at most.
    pub glob_limit: usize,
    /// The largest `content` or `new_string` accepted, in bytes.
    pub max_write_bytes: usize,
    /// How long one `grep` or `glob` may search before it stops with what it found.
    pub search_timeout: Duration,
}

impl Default for ToolFsConfig {
    fn default() -> ToolFsConfig {
        ToolFsConfig {
            read_lines: 2000,
            line_chars: 2000,
            grep_limit: 200,
            glob_limit: 200,
            max_write_bytes: 2 * 1024 * 1024,
            search_timeout: Duration::from_secs(30),
        }
    }
}
