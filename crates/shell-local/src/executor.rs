//! `LocalShellExecutor`: construction, the table's bookkeeping on finish, disposal and the
//! drop backstop. The trait methods are in `ops.rs`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::SystemTime;

use dsh_shell::{
    EndCause, ExitInfo, KillCause, ResolveLimits, ShellError, ShellExecSpec, TaskDone, TaskId,
};
use tokio::io::AsyncWriteExt;
use tokio::runtime::Handle;
use tokio::sync::{Notify, OnceCell, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{Checked, LocalConfigError, LocalShellConfig};
use crate::escapees::{self, Targets};
use crate::group::{Group, KILL_BOUND};
use crate::listeners::Listeners;
use crate::output::Output;
use crate::signal::{OsSignaller, Signaller};
use crate::spawn;
use crate::spill::SpillDir;
use crate::supervisor::Supervisor;
use crate::table::Table;
use crate::task::{Task, TaskMut};
use crate::watchdog::Watchdog;

/// Runs commands as local `bash -c` processes, each in its own session and process group.
/// Dispose it with [`LocalShellExecutor::dispose`]; dropping it undisposed SIGKILLs every live
/// group.
#[derive(Debug)]
pub struct LocalShellExecutor {
    pub(crate) inner: Arc<Inner>,
    pub(crate) me: Weak<LocalShellExecutor>,
}

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
}

/// The watchdog, started on first use.
#[derive(Debug)]
pub(crate) struct Lazy {
    program: Option<std::path::PathBuf>,
    started: std::sync::OnceLock<Option<Watchdog>>,
}

impl Lazy {
    /// The watchdog if it was started.
    pub(crate) fn running(&self) -> Option<&Watchdog> {
        self.started.get().and_then(Option::as_ref)
    }
}

impl Inner {
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

impl LocalShellExecutor {
    /// Validates `config` and builds an executor whose supervisors run on the current tokio
    /// runtime. Makes dsh a child subreaper (Linux) and raises its open-file limit.
    pub fn new(config: LocalShellConfig) -> Result<Arc<LocalShellExecutor>, LocalConfigError> {
        let handle = Handle::try_current().map_err(|_| LocalConfigError::NoRuntime)?;
        let signaller = config
            .signaller
            .clone()
            .unwrap_or_else(|| Arc::new(OsSignaller));
        let checked = config.check()?;
        escapees::become_subreaper();
        raise_open_file_limit();
        let c = &checked.config;
        let limits = ResolveLimits {
            default_workdir: checked.default_workdir.clone(),
            default_timeout: c.default_timeout,
            max_timeout: c.max_timeout,
            default_output_cap: c.output_cap,
            max_output_cap: c.max_output_cap,
        };
        let nonce = format!("{}-{:016x}", std::process::id(), fastrand::u64(..));
        let watchdog = Lazy {
            program: checked.config.watchdog.clone(),
            started: std::sync::OnceLock::new(),
        };
        let inner = Arc::new(Inner {
            spill_dir: SpillDir::new(checked.spill_root.clone()),
            checked,
            limits,
            signaller,
            nonce,
            enrolled: std::sync::atomic::AtomicU64::new(0),
            table: Mutex::new(Table::default()),
            listeners: Arc::new(Listeners::default()),
            tracker: TaskTracker::new(),
            handle,
            disposed: OnceCell::new(),
            watchdog,
        });
        Ok(Arc::new_cyclic(|me| LocalShellExecutor {
            inner,
            me: me.clone(),
        }))
    }

    /// Ends every task and returns when all are gone: closes the listeners (tasks ended by
    /// disposal are silent), refuses new work, terminates every group with
    /// `Killed(Disposed)`, awaits them and their stragglers, removes the spill directory and
    /// empties the table. Idempotent; concurrent callers all wait for the same end.
    pub async fn dispose(&self) {
        self.inner.dispose(false).await;
    }

    /// As [`dispose`](Self::dispose), but SIGKILLs every group and escapee at once instead of
    /// granting a grace: for a forced teardown.
    pub async fn kill_all(&self) {
        self.inner.dispose(true).await;
    }

    /// The spill file of a task, while it has one (for this crate's tests).
    #[doc(hidden)]
    pub fn spill_path(&self, id: TaskId) -> Option<std::path::PathBuf> {
        let task = self.inner.lock().tasks.get(&id).cloned()?;
        let state = task.lock();
        state.output.spill_file.as_ref().map(|p| p.to_path_buf())
    }

    /// Reserves, checks, spawns and registers one task; no await, so a dropped caller cannot
    /// leave a process behind.
    pub(crate) fn launch(
        &self,
        spec: ShellExecSpec,
        sink: Option<dsh_shell::OutputSink>,
    ) -> Result<Arc<Task>, ShellError> {
        let inner = &self.inner;
        if inner.lock().disposing {
            return Err(ShellError::Disposed);
        }
        spawn::check_workdir(&spec)?;
        let seq = inner.lock().admit(&inner.checked.config, spec.output_cap)?;
        let marker = format!("{}.{seq}", inner.nonce);
        // Before the spawn: a SIGKILL of dsh right after it still has the task ended.
        let watchdog = inner.watchdog();
        let mut spawned = match spawn::spawn(&inner.checked, &spec, &marker) {
            Ok(spawned) => spawned,
            Err(error) => {
                inner.lock().cancel_admission(spec.output_cap);
                return Err(error);
            }
        };
        if let Some(watchdog) = watchdog {
            watchdog.leader(spawned.pid);
        }
        let stdin = spawned.stdin.take();
        let task = Arc::new(Task {
            id: TaskId::allocate(),
            owner: spec.owner.clone(),
            command: spec.command.clone(),
            background: spec.background,
            started_at: SystemTime::now(),
            cap: spec.output_cap,
            pgid: spawned.pid,
            marker,
            state: Mutex::new(TaskMut {
                output: Output::new(spec.output_cap),
                cause: None,
                force: false,
                finished: None,
                abandoned: false,
            }),
            done: watch::Sender::new(None),
            terminate: Notify::new(),
            settled: CancellationToken::new(),
            sink: sink.map(crate::task::Sink),
        });
        let disposing = {
            let mut table = inner.lock();
            table.tasks.insert(task.id, task.clone());
            table.disposing
        };
        if disposing {
            // Disposal began during the spawn and may have missed this task.
            task.request_end(EndCause::Killed(KillCause::Disposed), false);
        }
        if let (Some(mut writer), Some(bytes)) = (stdin, spec.stdin.clone()) {
            inner.tracker.spawn_on(
                async move {
                    // A child that exits without reading makes this fail: that is its right.
                    let _ = writer.write_all(&bytes).await;
                },
                &inner.handle,
            );
        }
        let supervisor = Supervisor {
            inner: inner.clone(),
            executor: self.me.clone(),
            task: task.clone(),
            spawned,
            timeout: spec.timeout,
        };
        inner.tracker.spawn_on(supervisor.run(), &inner.handle);
        Ok(task)
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
    pub fn finished(&self, task: &Arc<Task>, exit: ExitInfo, executor: &Weak<LocalShellExecutor>) {
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

impl Drop for LocalShellExecutor {
    fn drop(&mut self) {
        if self.inner.disposed.initialized() {
            return;
        }
        let tasks: Vec<Arc<Task>> = self.inner.lock().tasks.values().cloned().collect();
        let live: Vec<&Arc<Task>> = tasks.iter().filter(|t| !t.settled.is_cancelled()).collect();
        if live.is_empty() {
            return;
        }
        tracing::warn!(
            tasks = live.len(),
            "shell executor dropped without dispose; killing its processes"
        );
        for task in live {
            task.request_end(EndCause::Killed(KillCause::Disposed), true);
            Group::kill_sync(task.pgid, &*self.inner.signaller);
            escapees::kill_now(&self.inner.targets_for(task, Vec::new()));
        }
    }
}

/// Raises the soft open-file limit to `min(hard, 65,536)`, never lowering it.
fn raise_open_file_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let wanted = limit.maximum.map_or(65_536, |hard| hard.min(65_536));
    if limit.current.is_some_and(|soft| soft < wanted) {
        let raised = rustix::process::Rlimit {
            current: Some(wanted),
            maximum: limit.maximum,
        };
        if let Err(error) = setrlimit(Resource::Nofile, raised) {
            tracing::debug!(%error, "cannot raise the open-file limit");
        }
    }
}
