//! `LocalShellExecutor`: construction, launching a task under its supervisor, disposal and
//! the drop backstop. Its shared state is `inner.rs`; the trait methods are in `ops.rs`.

use std::sync::{Arc, Mutex, Weak};
use std::time::SystemTime;

use dsh_shell::{EndCause, KillCause, ResolveLimits, ShellError, ShellExecSpec, TaskId};
use tokio::io::AsyncWriteExt;
use tokio::runtime::Handle;
use tokio::sync::{Notify, OnceCell, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{LocalConfigError, LocalShellConfig};
use crate::escapees::{self};
use crate::group::Group;
use crate::inner::{Inner, Lazy};
use crate::listeners::Listeners;
use crate::output::Output;
use crate::signal::OsSignaller;
use crate::spawn;
use crate::spill::SpillDir;
use crate::supervisor::Supervisor;
use crate::table::Table;
use crate::task::{Task, TaskMut};

/// Runs commands as local `bash -c` processes, each in its own session and process group.
/// Dispose it with [`LocalShellExecutor::dispose`]; dropping it undisposed SIGKILLs every live
/// group.
#[derive(Debug)]
pub struct LocalShellExecutor {
    pub(crate) inner: Arc<Inner>,
    pub(crate) me: Weak<LocalShellExecutor>,
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
        let watchdog = Lazy::new(checked.config.watchdog.clone());
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
            sandbox: std::sync::OnceLock::new(),
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

    /// What the kernel gives a sandboxed command here: the Landlock ABI and whether every
    /// restriction is enforced, or why nothing can be (asked once, by starting the helper in
    /// a process of its own).
    pub fn sandbox_status(&self) -> Result<crate::sandbox::Achieved, String> {
        self.inner.sandbox_status()
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
        let sandboxed = match inner.sandboxed(&spec.sandbox) {
            Ok(sandboxed) => sandboxed,
            Err(error) => {
                inner.lock().cancel_admission(spec.output_cap);
                return Err(error);
            }
        };
        // Before the spawn: a SIGKILL of dsh right after it still has the task ended.
        let watchdog = inner.watchdog();
        let mut spawned = match spawn::spawn(&inner.checked, &spec, &marker, sandboxed.as_ref()) {
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
