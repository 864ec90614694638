//! Finding and ending descendants that left their task's process group.
//!
//! dsh is a child subreaper, so an orphaned descendant of a task is re-parented to dsh instead
//! of init. A sweep walks dsh's children, picks those that belong to the tasks it is given (by
//! session, which a setsid'd task leader fixes for its tree, or by the task's marker variable,
//! which a descendant that started a new session still carries), SIGKILLs them and reaps them
//! by pid. It never waits for "any child": tokio reaps the leaders it spawned, and the leader
//! registry below keeps a sweep away from them.

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};

use crate::procfs;

/// The variable every child carries: `<executor nonce>.<spawn sequence>`.
pub(crate) const MARKER_VAR: &str = "DSH_SHELL_TASK";

/// Leaders tokio still waits for, across every executor of the process. The same lock is held
/// across a spawn and its registration, so a sweep never sees an unregistered leader.
static LEADERS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

pub(crate) fn leaders() -> MutexGuard<'static, BTreeSet<i32>> {
    LEADERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The leader `pid` was reaped by tokio.
pub(crate) fn leader_reaped(pid: i32) {
    leaders().remove(&pid);
}

/// Whose descendants a sweep ends.
#[derive(Debug, Default)]
pub(crate) struct Targets {
    /// Sessions (each a task leader's pid) whose members are ours.
    pub sessions: Vec<i32>,
    /// `MARKER_VAR=<value>` entries that mark ours; with `prefix`, entries starting so.
    pub markers: Vec<Vec<u8>>,
    pub prefix: bool,
    /// Groups under a graceful termination: their live members are left to it.
    pub spare_groups: Vec<i32>,
}

impl Targets {
    pub fn marker_entry(value: &str) -> Vec<u8> {
        format!("{MARKER_VAR}={value}").into_bytes()
    }

    fn marked(&self, entry: &[u8]) -> bool {
        self.markers.iter().any(|m| {
            if self.prefix {
                entry.starts_with(m)
            } else {
                entry == m.as_slice()
            }
        })
    }
}

/// One pass; returns how many identified processes it acted on. `killed` remembers whom
/// this sweep has signalled: a process that is exiting but not yet a zombie has already
/// released its memory, so its environment reads empty and its marker is gone — without the
/// memory it would drop out of the sweep while still alive.
fn sweep_once(targets: &Targets, killed: &mut BTreeSet<i32>) -> usize {
    let leaders = leaders();
    let mut acted = 0;
    for pid in procfs::children_of_self() {
        if leaders.contains(&pid) {
            continue;
        }
        let Some(stat) = procfs::stat(pid) else {
            continue;
        };
        let ours = killed.contains(&pid)
            || targets.sessions.contains(&stat.session)
            || targets.sessions.contains(&stat.pgrp)
            || (!stat.zombie() && procfs::environ_has(pid, &|e| targets.marked(e)));
        if !ours {
            continue;
        }
        let Some(process) = Pid::from_raw(pid) else {
            continue;
        };
        if !stat.zombie() {
            if targets.spare_groups.contains(&stat.pgrp) {
                continue;
            }
            let _ = rustix::process::kill_process(process, Signal::KILL);
            killed.insert(pid);
        }
        let _ = rustix::process::waitid(
            WaitId::Pid(process),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
        );
        acted += 1;
    }
    acted
}

/// Sweeps until a pass finds nothing, or gives up after `bound` with a warning.
pub(crate) async fn sweep(targets: &Targets, bound: Duration) {
    let started = Instant::now();
    let mut killed = BTreeSet::new();
    while sweep_once(targets, &mut killed) > 0 {
        if started.elapsed() > bound {
            tracing::warn!(
                ?targets,
                "escaped descendants still present; giving up on them"
            );
            return;
        }
        // A SIGKILLed process needs a moment to become reapable.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// SIGKILLs every process on the machine that `ours` picks (never this process), pass after
/// pass, until a pass finds none alive or `bound` passed; returns how many it signalled. A
/// killed process that is this process's child (an orphan re-parented here) is reaped, except
/// `spare`, whose starter reaps it. Blocking: for the watchdog, or on the blocking pool.
pub(crate) fn kill_everywhere(
    ours: &dyn Fn(i32, &procfs::Stat) -> bool,
    spare: Option<i32>,
    bound: Duration,
) -> usize {
    let me = std::process::id() as i32;
    let started = Instant::now();
    // Whom this sweep signalled: an exiting process has already lost its environment.
    let mut killed = BTreeSet::new();
    loop {
        let mut alive = 0;
        for pid in procfs::all_pids() {
            if pid == me {
                continue;
            }
            let Some(stat) = procfs::stat(pid) else {
                continue;
            };
            if stat.zombie() {
                continue;
            }
            if (killed.contains(&pid) || ours(pid, &stat))
                && let Some(process) = Pid::from_raw(pid)
            {
                let _ = rustix::process::kill_process(process, Signal::KILL);
                killed.insert(pid);
                alive += 1;
            }
        }
        reap_killed_children(&killed, spare);
        if alive == 0 || started.elapsed() > bound {
            return killed.len();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps the zombies among `killed` that are this process's children, but `spare` and the
/// executor's leaders (tokio reaps those).
fn reap_killed_children(killed: &BTreeSet<i32>, spare: Option<i32>) {
    let leaders = leaders();
    for pid in procfs::children_of_self() {
        if !killed.contains(&pid) || leaders.contains(&pid) || Some(pid) == spare {
            continue;
        }
        if let Some(process) = Pid::from_raw(pid) {
            let _ = rustix::process::waitid(
                WaitId::Pid(process),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            );
        }
    }
}

/// A synchronous best effort for `Drop`: SIGKILL what is identified, no waiting.
pub(crate) fn kill_now(targets: &Targets) {
    let _ = sweep_once(targets, &mut BTreeSet::new());
}

/// Makes dsh the reaper of its orphaned descendants. Process-wide and never undone.
pub(crate) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        tracing::warn!(%error, "cannot become a child subreaper; escaped descendants will outlive their tasks");
    }
}
