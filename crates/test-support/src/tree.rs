//! Real directory trees for tests: files written with their parents, and git repositories
//! driven by the real `git`.

use std::path::Path;
use std::process::Command;

/// Writes `bytes` to `path`, creating its parent directories.
pub fn write(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) {
    let path = path.as_ref();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

/// Runs `git <args>` in `dir` with a fixed identity; panics with git's output on failure.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=tests@dsh", "-c", "user.name=dsh tests"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}
