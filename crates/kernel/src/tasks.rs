//! Scope-owned tasks: spawned on tokio, stopped and awaited when their scope is disposed.
//!
//! A task is one effect of its scope: disposal stops it and waits until its future has been
//! dropped, so nothing the task owns outlives the scope. A plain task is aborted at once; a
//! graceful one sees the scope's token fire when disposal begins, may finish its own cleanup,
//! and is aborted only if it has not ended within the grace its spawner chose. A task that
//! finishes on its own — or is aborted before it ever ran — withdraws its effect, so a
//! long-lived scope does not accumulate finished tasks.

use std::future::Future;
use std::sync::Arc;
use std::sync::Weak;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::contain::panic_message;
use crate::error::{KernelError, TaskError};
use crate::scope::{Effect, Scope, ScopeInner};

tokio::task_local! {
    /// Which scoped task the current tokio task is, so a disposal can tell its caller's own
    /// task from the tasks it must stop.
    pub(crate) static CURRENT_TASK: TaskMark;
}

pub(crate) struct TaskMark {
    pub(crate) scope: Weak<ScopeInner>,
    effect: u64,
}

/// A handle to a scoped task. Dropping it detaches the task, which still ends with its scope.
#[derive(Debug)]
pub struct TaskHandle<T> {
    output: oneshot::Receiver<Result<T, TaskError>>,
    abort: AbortHandle,
}

impl<T> TaskHandle<T> {
    /// Aborts the task at its next await point.
    pub fn abort(&self) {
        self.abort.abort();
    }

    /// True once the task has finished, been aborted or panicked.
    pub fn is_finished(&self) -> bool {
        self.abort.is_finished()
    }

    /// Waits for the task's output, or for the reason it has none.
    pub async fn join(self) -> Result<T, TaskError> {
        self.output.await.unwrap_or(Err(TaskError::Cancelled))
    }
}

/// How a scoped task is stopped when its scope is disposed.
pub(crate) struct TaskEffect {
    join: JoinHandle<()>,
    grace: Option<Duration>,
}

impl TaskEffect {
    /// Stops the task and waits until its future is gone. The task that is itself running
    /// this disposal (it disposed its own scope) is spared: it cannot wait for itself.
    pub(crate) async fn stop(self, scope: &Scope, effect: u64) {
        let own = CURRENT_TASK
            .try_with(|mark| {
                mark.effect == effect && Weak::ptr_eq(&mark.scope, &scope.downgrade_inner())
            })
            .unwrap_or(false);
        if own {
            return;
        }
        let mut join = self.join;
        if let Some(grace) = self.grace {
            if tokio::time::timeout(grace, &mut join).await.is_ok() {
                return;
            }
            tracing::warn!(
                scope = %scope.path(),
                "a graceful task did not end within {grace:?} of cancellation; aborting it"
            );
        }
        join.abort();
        // Aborted or finished: either way the future has been dropped once this resolves. A
        // task's own panic was already logged inside it.
        let _ = join.await;
    }
}

/// Where a task's effect stands, so its withdrawal and its registration cannot miss each other.
const PENDING: u8 = 0;
const REGISTERED: u8 = 1;
const GONE: u8 = 2;

/// Withdraws the task's effect from its scope when the task's future is dropped — after it
/// ran to the end, or unpolled, when the task was aborted before its first poll.
struct Withdraw {
    scope: Weak<ScopeInner>,
    effect: u64,
    state: Arc<AtomicU8>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        // Still pending: `spawn` has not recorded the effect (the future may even be dropped
        // inline, under the scope's lock), so there is nothing to remove and no lock to take.
        if self
            .state
            .compare_exchange(PENDING, GONE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        self.state.store(GONE, Ordering::Release);
        if let Some(inner) = self.scope.upgrade() {
            Scope::from_inner(inner).remove_effect(self.effect);
        }
    }
}

impl Scope {
    /// Spawns `fut` as a task owned by this scope; disposal aborts it and waits for it. Fails
    /// when the scope's disposal has begun or when called outside a tokio runtime. A panic in
    /// the task is contained, logged and reported by [`TaskHandle::join`].
    pub fn spawn<F>(&self, fut: F) -> Result<TaskHandle<F::Output>, KernelError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.spawn_task(None, fut)
    }

    /// Spawns a task that is told to stop before it is made to: `task` receives this scope's
    /// token, which fires when disposal begins; disposal then waits up to `grace` for the task
    /// to end by itself and aborts it only after that. Use it for work whose cleanup matters
    /// (killing a process group, writing a closing record). Needs a tokio runtime with timers.
    pub fn spawn_graceful<F, Fut>(
        &self,
        grace: Duration,
        task: F,
    ) -> Result<TaskHandle<Fut::Output>, KernelError>
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future + Send + 'static,
        Fut::Output: Send + 'static,
    {
        if !self.is_active() {
            return Err(self.closed("tasks"));
        }
        // The grace is a timer: refuse up front rather than panic inside a disposal.
        let has_timer = std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO)));
        if has_timer.is_err() {
            return Err(KernelError::NoTimer {
                scope: self.path().to_owned(),
            });
        }
        self.spawn_task(Some(grace), task(self.token()))
    }

    fn spawn_task<F>(
        &self,
        grace: Option<Duration>,
        fut: F,
    ) -> Result<TaskHandle<F::Output>, KernelError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| KernelError::NoRuntime {
                scope: self.path().to_owned(),
            })?;
        let (tx, rx) = oneshot::channel();
        let weak = self.downgrade_inner();
        let path = self.path().to_owned();
        let mut abort = None;
        // Boxed once here: the wrappers below (the panic guard, the task-local mark, tokio's
        // task cell) each move their future, and a session's futures run to kilobytes.
        let fut = Box::pin(fut);
        // Spawned under the scope's lock, so the phase check and the effect are one step. The
        // withdrawal guard lives in the future from the start, so it runs even if the task is
        // aborted before its first poll; its state tells it whether the effect was recorded.
        self.register("tasks", |effect| {
            let state = Arc::new(AtomicU8::new(PENDING));
            let guard = Withdraw {
                scope: weak.clone(),
                effect,
                state: state.clone(),
            };
            let mark = TaskMark {
                scope: weak,
                effect,
            };
            let join = runtime.spawn(CURRENT_TASK.scope(mark, async move {
                let guard = guard;
                let output = match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                    Ok(value) => Ok(value),
                    Err(payload) => {
                        let message = panic_message(payload.as_ref());
                        tracing::error!(scope = %path, "scoped task panicked: {message}");
                        Err(TaskError::Panicked { message })
                    }
                };
                // Withdraw before reporting, so a joiner sees the effect already gone.
                drop(guard);
                let _ = tx.send(output);
            }));
            abort = Some(join.abort_handle());
            let recorded = state
                .compare_exchange(PENDING, REGISTERED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            Ok(recorded.then_some(Effect::Task(TaskEffect { join, grace })))
        })?;
        match abort {
            Some(abort) => Ok(TaskHandle { output: rx, abort }),
            // `register` returned Ok, so the closure ran and set `abort`.
            None => Err(self.closed("tasks")),
        }
    }

    /// Aborts `effect` if it is a scoped task, without waiting: the runtime's last resort when
    /// it is dropped without a shutdown.
    pub(crate) fn abort_task(effect: &Effect) {
        if let Effect::Task(task) = effect {
            task.join.abort();
        }
    }
}
