//! Keeps a repository's `.git/hooks` and `.git/config` read-only inside a writable root.
//!
//! Why: a hook or a `core.hooksPath` planted by a sandboxed command runs later, outside the
//! sandbox, the next time the user runs git. Landlock cannot take back part of a tree it
//! made writable, so the helper does it with mounts, in a mount namespace of its own (a
//! user namespace too when it is not privileged): each root's `.git` is bound onto itself,
//! so it cannot be renamed away or replaced, and its `hooks` and `config` are bound
//! read-only. The namespace dies with the command; nothing changes outside it.
//!
//! Only each writable root's own `.git` directory is guarded: a submodule's or a nested
//! repository's is not (the RFC on the sandbox says so).

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};

/// Enters a mount namespace of this process's own, where mounts change nothing outside.
/// Privileged, a mount namespace alone; otherwise inside a user namespace that maps this
/// user onto itself. Must run while the process has one thread (the helper's start).
pub(crate) fn enter_namespace() -> Result<(), String> {
    let privileged = unshare(CloneFlags::CLONE_NEWNS).is_ok();
    if !privileged {
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("no user and mount namespace may be made ({e})"))?;
        // The order is the kernel's: groups refused before the group map is written.
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text)
                .map_err(|e| format!("/proc/self/{file} cannot be written ({e})"))
        };
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
    // Nothing mounted here may travel back to the parent namespace.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("the mounts cannot be made private ({e})"))
}

/// Guards the `.git` of every root in `roots` that has one, in a namespace of this
/// process's own; with none, no namespace is made (it costs a copy of the mount table).
pub(crate) fn guard(roots: &[PathBuf]) -> Result<(), String> {
    let repositories: Vec<PathBuf> = roots
        .iter()
        .map(|root| root.join(".git"))
        .filter(|git| git.is_dir())
        .collect();
    if repositories.is_empty() {
        return Ok(());
    }
    enter_namespace()?;
    repositories
        .iter()
        .try_for_each(|git| guard_repository(git))
}

/// `.git` bound onto itself (a mount point cannot be renamed or removed), then `hooks` and
/// `config` read-only. Both are made when missing, so neither can be created unguarded.
fn guard_repository(git: &Path) -> Result<(), String> {
    let hooks = git.join("hooks");
    let config = git.join("config");
    if !hooks.exists() {
        std::fs::create_dir(&hooks)
            .map_err(|e| format!("{} cannot be made ({e})", hooks.display()))?;
    }
    if !config.exists() {
        std::fs::File::create(&config)
            .map_err(|e| format!("{} cannot be made ({e})", config.display()))?;
    }
    bind(git)?;
    for path in [&hooks, &config] {
        bind(path)?;
        read_only(path)?;
    }
    Ok(())
}

fn bind(path: &Path) -> Result<(), String> {
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("{} cannot be bound ({e})", path.display()))
}

/// Remounts the bind at `path` read-only. The flags it has already are kept: in a user
/// namespace the kernel refuses a remount that would drop `nosuid`, `nodev` or `noexec`.
fn read_only(path: &Path) -> Result<(), String> {
    let has = statvfs(path)
        .map_err(|e| format!("{} cannot be inspected ({e})", path.display()))?
        .flags();
    let kept = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ]
    .into_iter()
    .filter(|(st, _)| has.contains(*st))
    .fold(MsFlags::empty(), |flags, (_, ms)| flags | ms);
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | kept,
        None::<&str>,
    )
    .map_err(|e| format!("{} cannot be made read-only ({e})", path.display()))
}

/// Whether `.git` can be guarded on this machine: the namespace is entered and a directory
/// bound read-only, in this (throwaway) process.
pub(crate) fn probe() -> Result<(), String> {
    enter_namespace()?;
    let scratch = std::env::temp_dir();
    bind(&scratch)?;
    read_only(&scratch)
}
