//! The watchdog: a small process that outlives dsh, so that what dsh started dies with dsh even
//! when dsh itself is SIGKILLed and runs no shutdown at all.
//!
//! The executor starts it once (`LocalShellConfig::watchdog` names the program: the dsh binary
//! itself, whose `main` hands over to [`run_if_requested`] first) in a process group of its own,
//! so a Ctrl-C at the terminal does not reach it, with its stdin the read end of a pipe only
//! dsh holds. dsh reports each task leader on that pipe as it spawns it (`+<pid>`) and as its
//! group is gone (`-<pid>`). When the pipe ends — dsh exited, crashed or was killed — the
//! watchdog SIGKILLs the process group of every leader still reported and every process whose
//! session is one of theirs or whose environment carries this executor's marker (which a
//! `setsid` descendant keeps), until a pass finds none alive or two seconds passed, and exits.
//! A clean shutdown ends everything itself and says so (`!`) before it closes the pipe: the
//! watchdog then exits at once, without a pass over every process of the machine.
//!
//! The executor starts its watchdog with the first process it must cover (a task, an
//! enrolled server): a dsh that never runs a command has no second process.
//!
//! Out of reach, as for the executor's own sweep: a descendant that started a new session
//! and cleared its environment. A leader's pid reused by an unrelated session between its end
//! and dsh's death is covered by the `-<pid>` report, which removes it first.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::escapees::{self, Targets};
use crate::procfs;

/// The first argument that makes the program run as a watchdog.
pub const ARG: &str = "--dsh-shell-watchdog";

/// What dsh says when it ended everything itself.
const CLEAN: &str = "!";

/// How long the watchdog keeps sweeping for processes that are still appearing.
const SWEEP_BOUND: Duration = Duration::from_secs(2);

/// For a binary's `main`, before anything else: when this process was started as a watchdog,
/// runs it to the end and returns the exit code; otherwise `None`, and the program goes on.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != ARG {
        return None;
    }
    let nonce = args.next()?.into_string().ok()?;
    serve(std::io::stdin().lock(), &nonce);
    Some(ExitCode::SUCCESS)
}

/// Reads leader reports from `input` until it ends, then ends every process of the executor
/// whose marker nonce is `nonce`. Returns how many processes it killed.
pub fn serve(input: impl BufRead, nonce: &str) -> usize {
    let mut leaders = BTreeSet::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        if line == CLEAN {
            return 0;
        }
        // Anything but a well-formed report is ignored: the pipe is dsh's alone.
        if let Some(pid) = line.strip_prefix('+').and_then(|p| p.parse::<i32>().ok())
            && pid > 0
        {
            leaders.insert(pid);
        } else if let Some(pid) = line.strip_prefix('-').and_then(|p| p.parse::<i32>().ok()) {
            leaders.remove(&pid);
        }
    }
    end_everything(nonce, &leaders, SWEEP_BOUND)
}

/// SIGKILLs the reported groups, then everything in their sessions or carrying the marker,
/// pass after pass, until a pass finds nothing alive or `bound` has passed.
fn end_everything(nonce: &str, leaders: &BTreeSet<i32>, bound: Duration) -> usize {
    for leader in leaders {
        if let Some(group) = Pid::from_raw(*leader) {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }
    let marker = Targets::marker_entry(&format!("{nonce}."));
    escapees::kill_everywhere(
        &|pid, stat| {
            leaders.contains(&stat.session) || procfs::environ_has(pid, &|e| e.starts_with(&marker))
        },
        None,
        bound,
    )
}

/// dsh's side: the running watchdog and the pipe to it.
#[derive(Debug)]
pub(crate) struct Watchdog {
    pipe: Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
}

impl Watchdog {
    /// Starts `program` as the watchdog of the executor whose marker nonce is `nonce`.
    pub(crate) fn start(program: &Path, nonce: &str) -> std::io::Result<Watchdog> {
        let mut child = Command::new(program)
            .arg0("dsh-shell-watchdog")
            .arg(ARG)
            .arg(nonce)
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: signals a terminal sends dsh's group must not end the watchdog.
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Watchdog {
            pipe: Mutex::new(pipe),
            child: Mutex::new(Some(child)),
        })
    }

    /// A task leader was spawned: its group and session are the executor's.
    pub(crate) fn leader(&self, pid: i32) {
        self.report(&format!("+{pid}\n"));
    }

    /// A task leader's group is gone: its pid may be reused.
    pub(crate) fn ended(&self, pid: i32) {
        self.report(&format!("-{pid}\n"));
    }

    fn report(&self, line: &str) {
        let mut pipe = self.pipe.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(writer) = pipe.as_mut()
            && let Err(error) = writer.write_all(line.as_bytes())
        {
            tracing::warn!(%error, "the shell watchdog is gone; a SIGKILL of dsh would leave its tools running");
            *pipe = None;
        }
    }

    /// The executor was disposed and every task is gone: says so, closes the pipe (the
    /// watchdog exits without a sweep) and reaps it, waiting at most `bound`.
    pub(crate) async fn close(&self, bound: Duration) {
        // The pipe is taken before the last word is written, under one lock: a report racing
        // this close (a task's group seen gone) then finds no pipe, instead of writing to a
        // watchdog that already read `!` and exited (a broken pipe, and a false warning).
        let pipe = self
            .pipe
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut pipe) = pipe {
            let _ = pipe.write_all(format!("{CLEAN}\n").as_bytes());
        }
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            let waited = tokio::task::spawn_blocking(move || child.wait());
            if tokio::time::timeout(bound, waited).await.is_err() {
                tracing::warn!("the shell watchdog did not exit in time");
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropped without `close` (an executor dropped undisposed): the pipe closes, so the
        // watchdog sweeps; nobody waits for it.
        drop(
            self.pipe
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }
}
