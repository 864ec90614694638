//! The git work tree of a directory: its root and head read from disk, its dirtiness asked
//! of `git status` within a timeout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use dsh_agent::record::GitState;
use tokio::process::Command;

/// The nearest directory at or above `cwd` that holds a `.git` entry (a directory, or the
/// file of a linked work tree or submodule).
pub(crate) fn find_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The checked-out branch, or `detached at <short id>`, read from `HEAD` without running git.
pub(crate) fn read_head(root: &Path) -> Option<String> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_file() {
        let pointer = std::fs::read_to_string(&dot_git).ok()?;
        let target = pointer.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    } else {
        dot_git
    };
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    if let Some(reference) = head.strip_prefix("ref:") {
        let reference = reference.trim();
        return Some(
            reference
                .strip_prefix("refs/heads/")
                .unwrap_or(reference)
                .to_owned(),
        );
    }
    let short: String = head.chars().take(7).collect();
    (short.len() == 7 && short.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| format!("detached at {short}"))
}

/// Starts `git status` for `root`; `None` when git cannot be started.
pub(crate) fn start_status(root: &Path) -> Option<tokio::process::Child> {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain", "--ignore-submodules=dirty"])
        // Never take the index lock: the user's own git commands must not collide with ours.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| tracing::debug!("git status did not start: {err}"))
        .ok()
}

/// Whether the tree has changes, from a started `git status`; `None` when git failed or took
/// longer than `timeout` (a huge tree, a network file system): then the block says nothing.
pub(crate) async fn dirty(child: Option<tokio::process::Child>, timeout: Duration) -> Option<bool> {
    let child = child?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(output)) if output.status.success() => Some(!output.stdout.is_empty()),
        Ok(Ok(_)) | Ok(Err(_)) => None,
        Err(_) => {
            tracing::debug!(
                "git status took longer than {timeout:?}; the tree's state is left out"
            );
            None
        }
    }
}

/// The state of the tree at `root`, with `dirty` already probed.
pub(crate) fn state(root: &Path, dirty: Option<bool>) -> GitState {
    GitState {
        root: root.display().to_string(),
        head: read_head(root),
        dirty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_names_a_branch_a_detached_commit_or_a_linked_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(read_head(root).as_deref(), Some("feature/x"));
        std::fs::write(
            root.join(".git/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(read_head(root).as_deref(), Some("detached at 0123456"));
        std::fs::write(root.join(".git/HEAD"), "garbage").unwrap();
        assert_eq!(read_head(root), None);

        let linked = tempfile::tempdir().unwrap();
        std::fs::write(
            linked.path().join(".git"),
            format!("gitdir: {}\n", root.join(".git").display()),
        )
        .unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(read_head(linked.path()).as_deref(), Some("main"));
        assert_eq!(
            find_root(&linked.path().join("a/b")).as_deref(),
            Some(linked.path())
        );
    }
}
