//! Signals to process groups, behind a small seam so tests can record what is sent, and the
//! names `ExitInfo` reports.

use std::fmt;
use std::io;

use rustix::process::{Pid, Signal};

/// Sends signals to process groups. The executor's only way to signal; tests wrap the real
/// one to record calls.
pub trait Signaller: Send + Sync + fmt::Debug {
    /// Sends `signal` to every member of group `pgid`; `None` only probes (signal 0).
    fn signal_group(&self, pgid: i32, signal: Option<i32>) -> io::Result<()>;
}

/// The real signaller: `kill(-pgid, signal)`.
#[derive(Debug, Default)]
pub struct OsSignaller;

impl Signaller for OsSignaller {
    fn signal_group(&self, pgid: i32, signal: Option<i32>) -> io::Result<()> {
        let pid = Pid::from_raw(pgid).ok_or_else(|| io::Error::from_raw_os_error(libc_esrch()))?;
        match signal {
            None => rustix::process::test_kill_process_group(pid)?,
            Some(number) => {
                let signal = Signal::from_named_raw(number)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
                rustix::process::kill_process_group(pid, signal)?;
            }
        }
        Ok(())
    }
}

fn libc_esrch() -> i32 {
    rustix::io::Errno::SRCH.raw_os_error()
}

/// `SIGTERM`.
pub const TERM: i32 = Signal::TERM.as_raw();
/// `SIGKILL`.
pub const KILL: i32 = Signal::KILL.as_raw();
/// `SIGCONT`.
pub const CONT: i32 = Signal::CONT.as_raw();

/// The conventional name of a signal number; `SIG<n>` when it has none.
pub fn name(number: i32) -> String {
    const NAMES: [&str; 31] = [
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    // The table follows Linux numbering; elsewhere only the portable core is trusted.
    let portable = cfg!(target_os = "linux") || matches!(number, 1..=6 | 8 | 9 | 11 | 13 | 14 | 15);
    usize::try_from(number)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .filter(|_| portable)
        .map_or_else(|| format!("SIG{number}"), |name| (*name).to_owned())
}

/// Whether a probe result means the group is gone: "no such process" is gone, anything else
/// (success, "permission denied") is alive.
pub fn probe_says_gone(result: &io::Result<()>) -> bool {
    matches!(result, Err(e) if e.raw_os_error() == Some(libc_esrch()))
}
