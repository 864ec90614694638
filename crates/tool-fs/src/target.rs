//! Where a call's path points and what reads and writes it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs::{FileAccess, Resolved};
use dsh_tools::{ToolContext, ToolError};

use crate::errors::{from_fs, invalid};

/// The caller's file access and the path resolved against its roots.
pub(crate) struct Target {
    pub resolved: Resolved,
    pub files: Arc<dyn FileAccess>,
}

/// Resolves `path` for the caller of `cx`.
pub(crate) fn locate(cx: &ToolContext, path: &str) -> Result<Target, ToolError> {
    let resolved = resolve(cx, path)?;
    let files = cx.files().cloned().ok_or_else(|| {
        ToolError::new(
            "unsupported",
            "no file access is available to this session; use bash to read and change files",
        )
    })?;
    Ok(Target { resolved, files })
}

/// `path` resolved against the caller's roots (absolute paths need none).
pub(crate) fn resolve(cx: &ToolContext, path: &str) -> Result<Resolved, ToolError> {
    match cx.roots() {
        Some(roots) => roots.resolve(path).map_err(|e| from_fs(&e)),
        None if Path::new(path).is_absolute() => Ok(Resolved {
            path: PathBuf::from(path),
            inside: false,
        }),
        None => Err(invalid(format!(
            "invalid path {path:?}: relative, and this session has no working directory; give an absolute path"
        ))),
    }
}

/// `path` as the model should read it: relative to the cwd when inside it.
pub(crate) fn shown(cx: &ToolContext, path: &Path) -> String {
    cx.session_cwd()
        .and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|rel| !rel.as_os_str().is_empty())
        .unwrap_or(path)
        .display()
        .to_string()
}
