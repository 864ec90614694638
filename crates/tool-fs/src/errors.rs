//! The tools' error codes and how a file error reaches the model.

use dsh_fs::FsError;
use dsh_tools::ToolError;

/// Arguments the tool cannot use.
pub(crate) fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(dsh_tools::codes::INVALID_ARGUMENTS, message)
}

/// An edit that cannot apply to the text (not found, not unique).
pub(crate) fn no_match(message: impl Into<String>) -> ToolError {
    ToolError::new("no_match", message)
}

/// A file error, with what to do about it.
pub(crate) fn from_fs(err: &FsError) -> ToolError {
    let advice = match err {
        FsError::NotFound { .. } => " Check the path with `glob`.",
        FsError::TooLarge { .. } => " Use `grep` to find the lines you need.",
        FsError::NotText { .. } => " The file tools handle text files only.",
        FsError::Stale { .. } => "",
        FsError::IsDirectory { .. } => " Use `glob` to list its files.",
        FsError::PermissionDenied { .. }
        | FsError::OutsideRoots { .. }
        | FsError::InvalidPath { .. }
        | FsError::Other { .. } => "",
    };
    ToolError::new(err.code(), format!("{err}.{advice}"))
}
