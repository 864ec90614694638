//! The one async supervisor per task: reads the merged pipe, enforces the deadline, reaps the
//! leader, drains, terminates stragglers and escapees, then records the end. A plain tokio
//! task that holds no scope; dropped early (runtime shutdown), it SIGKILLs its group.

use std::sync::{Arc, Weak};
use std::time::Duration;

use dsh_shell::{EndCause, ExitInfo, OutputStats, SignalInfo};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::{Instant, sleep, sleep_until};

use crate::escapees;
use crate::group::{Group, KILL_BOUND, PROBE_EVERY};
use crate::inner::Inner;
use crate::signal::{self, Signaller};
use crate::spawn::Spawned;
use crate::spill::SpillWriter;
use crate::task::Task;
use dsh_shell::ShellExecutor;

/// Reads per call: at least 64 KiB, so a fast writer costs few wakeups.
const READ_BYTES: usize = 64 * 1024;

pub(crate) struct Supervisor {
    pub inner: Arc<Inner>,
    pub executor: Weak<dyn ShellExecutor>,
    pub task: Arc<Task>,
    pub spawned: Spawned,
    pub timeout: Option<Duration>,
}

/// SIGKILLs the group if the supervisor is dropped before the task settled.
struct KillOnDrop {
    pgid: i32,
    signaller: Arc<dyn Signaller>,
    armed: bool,
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.armed {
            Group::kill_sync(self.pgid, &*self.signaller);
        }
    }
}

struct Reader {
    pipe: Option<pipe::Receiver>,
    buf: Vec<u8>,
    spill: SpillWriter,
}

impl Reader {
    fn open(&self) -> bool {
        self.pipe.is_some()
    }

    /// One read; `None` at end of file or on a read error (the pipe is closed either way).
    async fn read(&mut self) -> Option<usize> {
        let pipe = self.pipe.as_mut()?;
        match pipe.read(&mut self.buf).await {
            Ok(0) | Err(_) => {
                self.pipe = None;
                None
            }
            Ok(n) => Some(n),
        }
    }

    /// Spills (outside the task's lock), then extends the ring and the total.
    fn store(&mut self, n: usize, task: &Task, inner: &Inner) {
        let data = &self.buf[..n];
        let spill_cap = inner.checked.config.spill_cap;
        let head = {
            let state = task.lock();
            let overflow = state.output.total + n as u64 > task.cap as u64;
            (overflow && !state.output.spill_started).then(|| state.output.ring.all())
        };
        let mut new_path = None;
        let starting = head.is_some();
        if let Some(head) = head {
            new_path = self.spill.start(&inner.spill_dir, &head, spill_cap);
        }
        self.spill.append(data, spill_cap);
        let mut state = task.lock();
        let output = &mut state.output;
        output.ring.push(data);
        output.total += n as u64;
        output.spill_started |= starting;
        output.spilled = self.spill.written;
        output.spill_stop = self.spill.stop;
        if new_path.is_some() {
            output.spill_file = new_path;
        }
        drop(state);
        if let Some(crate::task::Sink(sink)) = &task.sink {
            // Outside the task's lock: a reader of the task never waits for the sink.
            let _ = dsh_kernel::contain::call(|| {
                sink(data);
                Ok(())
            });
        }
    }
}

impl Supervisor {
    pub async fn run(self) {
        let Supervisor {
            inner,
            executor,
            task,
            spawned,
            timeout,
        } = self;
        let Spawned {
            mut child,
            pid,
            pipe,
            stdin: _,
        } = spawned;
        let signaller = inner.signaller.clone();
        let mut guard = KillOnDrop {
            pgid: pid,
            signaller: signaller.clone(),
            armed: true,
        };
        let mut group = Group::new(pid, signaller, inner.checked.config.term_grace);
        let spawned_at = Instant::now();
        let mut deadline = timeout.map(|t| (spawned_at + t, t));
        let mut reader = Reader {
            pipe: Some(pipe),
            buf: vec![0; READ_BYTES],
            spill: SpillWriter::default(),
        };

        let status = loop {
            let kill_at = group.kill_at();
            tokio::select! {
                biased;
                status = child.wait() => break status,
                () = task.terminate.notified() => group.begin(task.lock().force),
                () = sleep_until(deadline.map_or(spawned_at, |d| d.0)), if deadline.is_some() => {
                    if let Some((_, after)) = deadline.take() {
                        task.request_end(EndCause::TimedOut { after }, false);
                    }
                }
                () = sleep_until(kill_at.unwrap_or(spawned_at)), if kill_at.is_some() => group.kill(),
                n = reader.read(), if reader.open() => {
                    if let Some(n) = n {
                        reader.store(n, &task, &inner);
                    }
                }
            }
        };
        escapees::leader_reaped(pid);
        let duration = spawned_at.elapsed();

        // Drain: what the leader wrote last is still in the pipe.
        let drain_until = Instant::now() + inner.checked.config.drain_grace;
        while reader.open() {
            let kill_at = group.kill_at();
            tokio::select! {
                biased;
                () = task.terminate.notified() => group.begin(task.lock().force),
                () = sleep_until(kill_at.unwrap_or(drain_until)), if kill_at.is_some() => group.kill(),
                () = sleep_until(drain_until) => break,
                n = reader.read() => {
                    if let Some(n) = n {
                        reader.store(n, &task, &inner);
                    }
                }
            }
        }
        reader.spill.finish();
        let held = reader.open();
        reader.pipe = None;
        // Members that outlive a leader the executor already ended (timeout, kill, cancel) were
        // asked to stop by that ending; only a command that ended by itself leaves stragglers.
        // Deciding on the ending rather than on who is still dying keeps the result stable.
        let ended_by_us = group.terminating();
        let remaining = held || !group.probe();
        let stragglers = remaining && !ended_by_us;
        if stragglers {
            group.begin(task.lock().force);
        }
        // Escapees first: their members were never asked politely and get SIGKILL now; the
        // group keeps its grace.
        let spare = if group.gone() { vec![] } else { vec![pid] };
        escapees::sweep(&inner.targets_for(&task, spare), KILL_BOUND).await;

        let exit = finish_exit(&task, status, duration, stragglers);
        inner.finished(&task, exit, &executor);

        // Stragglers: tracked until gone, SIGKILL after the grace.
        while !group.probe() {
            if group.kill_at().is_some_and(|at| at <= Instant::now()) {
                group.kill();
            }
            if group.kill_overdue() {
                tracing::warn!(task = %task.id, pgid = pid, "group still alive after SIGKILL; no longer tracked");
                break;
            }
            tokio::select! {
                () = sleep(PROBE_EVERY) => {}
                () = task.terminate.notified() => {
                    if task.lock().force {
                        group.kill();
                    }
                }
            }
        }
        escapees::sweep(&inner.targets_for(&task, vec![]), KILL_BOUND).await;
        guard.armed = false;
        task.settled.cancel();
    }
}

/// The final `ExitInfo`, from the leader's status and the stream as it stands.
fn finish_exit(
    task: &Task,
    status: std::io::Result<std::process::ExitStatus>,
    duration: Duration,
    stragglers: bool,
) -> ExitInfo {
    use std::os::unix::process::ExitStatusExt;
    let (code, signal) = match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (Some(code), None),
            (None, Some(number)) => (
                None,
                Some(SignalInfo {
                    number,
                    name: signal::name(number),
                }),
            ),
            (None, None) => (Some(-1), None),
        },
        Err(error) => {
            tracing::warn!(task = %task.id, %error, "the leader's exit status was lost");
            (Some(-1), None)
        }
    };
    let state = task.lock();
    ExitInfo {
        code,
        signal,
        end: state.cause.clone().unwrap_or(EndCause::Exited),
        duration,
        stragglers_terminated: stragglers,
        output: OutputStats {
            total_bytes: state.output.total,
            truncated: state.output.truncated(),
            spill: state.output.spill(),
        },
    }
}
