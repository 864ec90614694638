//! The executor's shared state (`Inner`), which the executor, its operations and every
//! task's supervisor hold: the task table and its bookkeeping when a task finishes, the lazy
//! watchdog, and the ordered end of every task on disposal.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use dsh_shell::{
    EndCause, ExitInfo, KillCause, ResolveLimits, ShellError, ShellExecutor, TaskDone, TaskId,
};
use tokio::runtime::Handle;
use tokio::sync::OnceCell;
use tokio_util::task::TaskTracker;

use crate::config::Checked;
use crate::escapees::{self, Targets};
use crate::group::{Group, KILL_BOUND};
use crate::listeners::Listeners;
use crate::signal::Signaller;
use crate::spill::SpillDir;
use crate::table::Table;
use crate::task::Task;
use crate::watchdog::Watchdog;

#[derive(Debug)]
pub(crate) struct Inner {
    pub checked: Checked,
    pub limits: ResolveLimits,
    pub signaller: Arc<dyn Signaller>,
    /// This executor's half of every marker.
    pub nonce: String,
    /// Enrolments of processes started elsewhere, for their markers.
    pub enrolled: std::sync::atomic::AtomicU64,
    pub table: Mutex<Table>,
    pub listeners: Arc<Listeners>,
    pub spill_dir: SpillDir,
    pub tracker: TaskTracker,
    pub handle: Handle,
    pub disposed: OnceCell<()>,
    /// Ends this executor's processes if dsh dies without disposing it: started with the
    /// first process it must cover (a task, an enrolled server), since a dsh that never runs
    /// one needs no second process.
    pub watchdog: Lazy,
    /// What the sandbox helper can confine a command to here, asked on first need.
    pub sandbox: std::sync::OnceLock<Result<crate::sandbox::Achieved, String>>,
}

/// The watchdog, started on first use.
#[derive(Debug)]
pub(crate) struct Lazy {
    program: Option<std::path::PathBuf>,
    started: std::sync::OnceLock<Option<Watchdog>>,
}

impl Lazy {
    /// A watchdog of `program` (none when `None`), not started yet.
    pub(crate) fn new(program: Option<std::path::PathBuf>) -> Lazy {
        Lazy {
            program,
            started: std::sync::OnceLock::new(),
        }
    }

    /// The watchdog if it was started.
    pub(crate) fn running(&self) -> Option<&Watchdog> {
        self.started.get().and_then(Option::as_ref)
    }
}

/// How a sandboxed command starts: the helper, its confinement, and the command's `TMPDIR`.
#[derive(Debug)]
pub(crate) struct Sandboxed {
    pub helper: std::path::PathBuf,
    pub confinement: crate::sandbox::Confinement,
    pub tmp: std::path::PathBuf,
}

impl Inner {
    /// What this machine's kernel gives the sandbox (asked once, in a process of its own).
    pub(crate) fn sandbox_status(&self) -> Result<crate::sandbox::Achieved, String> {
        self.sandbox
            .get_or_init(|| match &self.checked.config.sandbox_helper {
                Some(helper) => crate::sandbox::probe(helper),
                None => Err("no sandbox helper is configured".into()),
            })
            .clone()
    }

    /// How `policy` starts a command; `None` for no sandbox. Refused when it cannot be
    /// applied here: the command must not run less confined than asked.
    pub(crate) fn sandboxed(
        &self,
        policy: &dsh_shell::SandboxPolicy,
    ) -> Result<Option<Sandboxed>, dsh_shell::ShellError> {
        let refused = |reason: String| dsh_shell::ShellError::Sandbox {
            policy: policy.name(),
            reason,
        };
        if matches!(policy, dsh_shell::SandboxPolicy::FullAccess) {
            return Ok(None);
        }
        let status = self.sandbox_status().map_err(refused)?;
        let Some(helper) = self.checked.config.sandbox_helper.clone() else {
            return Err(refused("no sandbox helper is configured".into()));
        };
        let spill = self
            .spill_dir
            .path()
            .map_err(|e| refused(format!("its private directory cannot be made: {e}")))?;
        let tmp = self
            .spill_dir
            .sandbox_tmp()
            .map_err(|e| refused(format!("its temporary directory cannot be made: {e}")))?;
        let Some(mut confinement) = crate::sandbox::Confinement::of(policy, &[spill]) else {
            return Ok(None);
        };
        // Where `.git` cannot be guarded here the start-up notice said so; the command runs.
        confinement.guard_git = status.git_unguarded.is_none();
        Ok(Some(Sandboxed {
            helper,
            confinement,
            tmp,
        }))
    }

    /// The watchdog, started now if this is its first use; `None` when none is configured or
    /// it could not start (said once).
    pub(crate) fn watchdog(&self) -> Option<&Watchdog> {
        let lazy = &self.watchdog;
        lazy.started
            .get_or_init(|| {
                let program = lazy.program.as_deref()?;
                Watchdog::start(program, &self.nonce)
                    .inspect_err(|error| {
                        tracing::warn!(%error, program = %program.display(), "cannot start the shell watchdog; a SIGKILL of dsh would leave its tools running");
                    })
                    .ok()
            })
            .as_ref()
    }
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn task(&self, id: TaskId) -> Result<Arc<Task>, ShellError> {
        let table = self.lock();
        if table.disposing {
            return Err(ShellError::Disposed);
        }
        table
            .tasks
            .get(&id)
            .cloned()
            .ok_or(ShellError::UnknownTask(id))
    }

    pub fn targets_for(&self, task: &Task, spare_groups: Vec<i32>) -> Targets {
        Targets {
            sessions: vec![task.pgid],
            markers: vec![Targets::marker_entry(&task.marker)],
            prefix: false,
            spare_groups,
        }
    }

    /// Drops `task` from the table (its spill file goes with it), outside the lock.
    pub fn remove(&self, id: TaskId) {
        let removed = self.lock().remove(id);
        if let Some(task) = removed {
            let spill = task.lock().output.spill_file.take();
            drop(spill);
        }
    }

    /// The supervisor's last word: store the end, wake waiters, notify, retain or remove.
    pub fn finished(&self, task: &Arc<Task>, exit: ExitInfo, executor: &Weak<dyn ShellExecutor>) {
        let abandoned = {
            let mut state = task.lock();
            state.finished = Some(exit.clone());
            state.abandoned
        };
        let disposing = {
            let mut table = self.lock();
            table.stopped();
            table.disposing
        };
        task.done.send_replace(Some(exit.clone()));
        if let Some(watchdog) = self.watchdog.running() {
            watchdog.ended(task.pgid);
        }
        if task.background
            && !disposing
            && let Some(executor) = executor.upgrade()
        {
            let done = TaskDone {
                id: task.id,
                command: task.command.clone(),
                exit: exit.clone(),
            };
            self.listeners.deliver(&*executor, &done);
        }
        if !task.background && (abandoned || !exit.output.truncated) {
            self.remove(task.id);
            return;
        }
        let limit = self.checked.config.max_finished_tasks;
        let evicted = {
            let mut table = self.lock();
            if table.tasks.contains_key(&task.id) {
                table.retain_finished(task.id, limit)
            } else {
                Vec::new()
            }
        };
        for old in evicted {
            let spill = old.lock().output.spill_file.take();
            drop(spill);
        }
    }

    pub async fn dispose(&self, force: bool) {
        if force {
            // A forced end does not wait for an earlier graceful one to finish its graces.
            self.end_all(true);
        }
        self.disposed
            .get_or_init(|| async {
                self.end_all(force);
                self.tracker.close();
                self.tracker.wait().await;
                let everything = Targets {
                    sessions: Vec::new(),
                    markers: vec![Targets::marker_entry(&format!("{}.", self.nonce))],
                    prefix: true,
                    spare_groups: Vec::new(),
                };
                escapees::sweep(&everything, KILL_BOUND).await;
                if let Some(watchdog) = self.watchdog.running() {
                    watchdog.close(KILL_BOUND).await;
                }
                self.spill_dir.close();
                let tasks = self.lock().clear();
                for task in &tasks {
                    let spill = task.lock().output.spill_file.take();
                    drop(spill);
                }
            })
            .await;
    }

    /// Refuses new work and asks every task, finished ones with stragglers included, to end.
    fn end_all(&self, force: bool) {
        let tasks: Vec<Arc<Task>> = {
            let mut table = self.lock();
            table.disposing = true;
            table.tasks.values().cloned().collect()
        };
        self.listeners.close();
        for task in tasks {
            if !task.request_end(EndCause::Killed(KillCause::Disposed), force) && force {
                task.lock().force = true;
                task.terminate.notify_one();
            }
            if force {
                Group::kill_sync(task.pgid, &*self.signaller);
            }
        }
    }
}
