//! What can go wrong reading or writing a file. Every message names the path and says what to
//! do, since it reaches the model as the tool's answer.

use std::path::PathBuf;

/// A failed read or write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// No file at the path.
    #[error("{path} does not exist")]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The path is a directory, not a file.
    #[error("{path} is a directory, not a file")]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// The content is not text: a NUL byte, or not UTF-8.
    #[error("{path} is not a text file ({why})")]
    NotText {
        /// The path.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// Too large to read whole.
    #[error("{path} is {size} bytes, over the {cap}-byte limit for reading a whole file")]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        cap: u64,
    },
    /// The file is not the version the writer expected.
    #[error("{path} {what}")]
    Stale {
        /// The path.
        path: PathBuf,
        /// What changed: "changed since it was read", "exists already", "no longer exists".
        what: String,
    },
    /// The operating system or the editor refused access.
    #[error("permission denied for {path}: {detail}")]
    PermissionDenied {
        /// The path.
        path: PathBuf,
        /// What refused.
        detail: String,
    },
    /// The path is outside the session's roots where it must be inside.
    #[error("{path} is outside the session's directories")]
    OutsideRoots {
        /// The path.
        path: PathBuf,
    },
    /// A relative path with no working directory to resolve it against, or a path that is
    /// not valid.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// Any other failure of the disk or the editor, with its own words.
    #[error("{path}: {detail}")]
    Other {
        /// The path.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
}

impl FsError {
    /// A stable snake_case code for tool results.
    pub fn code(&self) -> &'static str {
        match self {
            FsError::NotFound { .. } => "not_found",
            FsError::IsDirectory { .. } => "is_directory",
            FsError::NotText { .. } => "not_text",
            FsError::TooLarge { .. } => "too_large",
            FsError::Stale { .. } => "stale",
            FsError::PermissionDenied { .. } => "permission_denied",
            FsError::OutsideRoots { .. } => "outside_roots",
            FsError::InvalidPath { .. } => "invalid_path",
            FsError::Other { .. } => "fs_error",
        }
    }
}
