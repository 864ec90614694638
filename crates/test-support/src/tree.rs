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

/// Makes a named pipe at `path`: a command that reads it blocks until the test writes, so a
/// test can hold a command at a point without sleeping.
pub fn fifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
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
