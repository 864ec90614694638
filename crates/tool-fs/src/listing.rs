//! What `grep` and `glob` share: the walk (ripgrep's `ignore`: `.gitignore`, `.ignore` and
//! hidden files skipped, in parallel) and how paths are shown.

use std::path::{Path, PathBuf};

use dsh_tools::{ToolContext, ToolError};
use ignore::WalkBuilder;

use crate::args;
use crate::errors::invalid;
use crate::target::resolve;

/// Where a search starts: the `path` the model gave, else the session's cwd.
pub(crate) fn search_root(cx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path {
        Some(path) => {
            args::non_empty("path", path)?;
            Ok(resolve(cx, path)?.path)
        }
        None => cx.session_cwd().map(Path::to_path_buf).ok_or_else(|| {
            invalid("invalid path: this session has no working directory; give one")
        }),
    }
}

/// A walk of `root` as ripgrep does it by default, except that `.gitignore` is honoured
/// without a git repository too (a fresh checkout, a copied tree).
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false).threads(threads());
    walk
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().min(12))
        .unwrap_or(2)
}

/// `path` relative to `cwd` when under it, else as it is.
pub(crate) fn relative(path: &Path, cwd: Option<&Path>) -> PathBuf {
    cwd.and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|rel| !rel.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| path.to_path_buf())
}
