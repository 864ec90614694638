//! Scope-owned tasks: spawned on tokio, cancelled and awaited when their scope is disposed.
//!
//! A task is one effect of its scope: disposal aborts it and waits until its future has been
//! dropped, so nothing the task owns outlives the scope. A task that finishes on its own
//! withdraws its effect, so a long-lived scope does not accumulate finished tasks.

use std::future::Future;
use std::sync::Weak;

use futures::FutureExt;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use crate::contain::panic_message;
use crate::error::{KernelError, TaskError};
use crate::scope::{Scope, ScopeInner};

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

/// Withdraws the task's effect from its scope when the task's future ends, whichever way.
struct Withdraw {
    scope: Weak<ScopeInner>,
    effect: u64,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(inner) = self.scope.upgrade() {
            Scope::from_inner(inner).remove_effect(self.effect);
        }
    }
}

impl Scope {
    /// Spawns `fut` as a task owned by this scope. Fails when the scope's disposal has begun
    /// or when called outside a tokio runtime. A panic in the task is contained, logged and
    /// reported by [`TaskHandle::join`].
    pub fn spawn<F>(&self, fut: F) -> Result<TaskHandle<F::Output>, KernelError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| KernelError::NoRuntime {
                scope: self.path().to_owned(),
            })?;
        let (tx, rx) = oneshot::channel();
        let weak = self.downgrade();
        let path = self.path().to_owned();
        let mut abort = None;
        // The task is spawned while the scope's lock is held, so its effect is recorded before
        // its `Withdraw` guard can run (the guard waits for the lock). The guard is built on the
        // first poll, never inside `spawn`: a runtime that is shutting down drops an unpolled
        // future inline, and that must not touch the lock we hold.
        self.register("tasks", |effect| {
            let join = runtime.spawn(async move {
                let guard = Withdraw {
                    scope: weak,
                    effect,
                };
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
            });
            abort = Some(join.abort_handle());
            Ok(Box::new(move || {
                join.abort();
                Box::pin(async move {
                    // Aborted or finished: either way the future has been dropped once this
                    // resolves. A task's own panic was already logged inside it.
                    let _ = join.await;
                    Ok(())
                }) as futures::future::BoxFuture<'static, _>
            }))
        })?;
        match abort {
            Some(abort) => Ok(TaskHandle { output: rx, abort }),
            // `register` returned Ok, so the closure ran and set `abort`.
            None => Err(self.closed("tasks")),
        }
    }
}
