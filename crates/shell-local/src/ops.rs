//! The `ShellExecutor` operations of the local provider.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use dsh_shell::{
    EndCause, ExitInfo, KillCause, OutputChunk, OutputSink, RunOutput, ShellError,
    ShellExecRequest, ShellExecSpec, ShellExecutor, TaskDoneListener, TaskDoneSubscription, TaskId,
    TaskInfo,
};

use crate::executor::LocalShellExecutor;
use crate::inner::Inner;
use crate::spill;
use crate::task::Task;

/// Marks a foreground task abandoned when `run`'s future is dropped before it resolved: its
/// group is terminated with `Killed(Cancelled)` and it leaves the table once it has ended.
struct Abandon {
    task: Arc<Task>,
    inner: Arc<Inner>,
    armed: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let finished = {
            let mut state = self.task.lock();
            state.abandoned = true;
            state.finished.is_some()
        };
        if finished {
            self.inner.remove(self.task.id);
        } else {
            self.task
                .request_end(EndCause::Killed(KillCause::Cancelled), false);
        }
    }
}

impl LocalShellExecutor {
    /// A foreground run, its output handed to `sink` as it is read when there is one.
    async fn foreground(
        &self,
        spec: ShellExecSpec,
        sink: Option<OutputSink>,
    ) -> Result<RunOutput, ShellError> {
        if spec.background {
            return Err(ShellError::ModeMismatch { background: true });
        }
        spec.check()?;
        let task = self.launch(spec, sink)?;
        let mut abandon = Abandon {
            task: task.clone(),
            inner: self.inner.clone(),
            armed: true,
        };
        let exit = task.finished().await.ok_or(ShellError::Disposed)?;
        abandon.armed = false;
        let (tail, tail_start) = task.lock().output.tail();
        Ok(RunOutput {
            task_id: task.id,
            retained: exit.output.truncated,
            exit,
            tail,
            tail_start,
        })
    }
}

#[async_trait]
impl ShellExecutor for LocalShellExecutor {
    fn sandbox(&self) -> Result<Vec<String>, String> {
        let status = self.sandbox_status()?;
        Ok(status
            .git_unguarded
            .map(|reason| {
                format!(
                    ".git/hooks and .git/config are not protected ({reason}): a command could \
                     plant a git hook that runs outside the sandbox"
                )
            })
            .into_iter()
            .collect())
    }

    fn resolve(&self, request: ShellExecRequest) -> Result<ShellExecSpec, ShellError> {
        dsh_shell::resolve(request, &self.inner.limits)
    }

    async fn run(&self, spec: ShellExecSpec) -> Result<RunOutput, ShellError> {
        self.foreground(spec, None).await
    }

    async fn run_streaming(
        &self,
        spec: ShellExecSpec,
        sink: OutputSink,
    ) -> Result<RunOutput, ShellError> {
        self.foreground(spec, Some(sink)).await
    }

    async fn start(&self, spec: ShellExecSpec) -> Result<TaskId, ShellError> {
        if !spec.background {
            return Err(ShellError::ModeMismatch { background: false });
        }
        spec.check()?;
        Ok(self.launch(spec, None)?.id)
    }

    async fn read_output(
        &self,
        id: TaskId,
        since: u64,
        limit: usize,
    ) -> Result<OutputChunk, ShellError> {
        if limit == 0 {
            return Err(ShellError::InvalidRequest {
                field: "limit",
                reason: "must be at least 1 byte".to_owned(),
            });
        }
        let limit = limit.min(self.inner.checked.config.max_read) as u64;
        let task = self.inner.task(id)?;
        let (total, ring_start, spilled, path, exit, ring_bytes) = {
            let state = task.lock();
            let out = &state.output;
            if since > out.total {
                return Err(ShellError::InvalidRequest {
                    field: "since",
                    reason: format!(
                        "{since} is beyond the end of the output ({} bytes)",
                        out.total
                    ),
                });
            }
            let ring_start = out.ring_start();
            let from_ring = (since.max(ring_start) - ring_start) as usize;
            let to_ring = ((since.max(ring_start) + limit).min(out.total) - ring_start) as usize;
            let ring_bytes = out.ring.copy(from_ring, to_ring);
            let path = out.spill_file.as_ref().map(|p| p.to_path_buf());
            (
                out.total,
                ring_start,
                out.spilled,
                path,
                state.finished.clone(),
                ring_bytes,
            )
        };
        let chunk = |bytes: Vec<u8>, start: u64, exit: Option<ExitInfo>| OutputChunk {
            next: start + bytes.len() as u64,
            bytes: Bytes::from(bytes),
            start,
            total,
            skipped: start - since,
            exit,
        };
        if since < ring_start
            && since < spilled
            && let Some(path) = path
        {
            let len = (spilled.min(since + limit) - since) as usize;
            let read = tokio::task::spawn_blocking(move || spill::read_at(&path, since, len)).await;
            if let Ok(Some(bytes)) = read
                && bytes.len() == len
            {
                return Ok(chunk(bytes, since, exit));
            }
            // The file went away (a release racing this read): what remains is the ring.
        }
        Ok(chunk(ring_bytes, since.max(ring_start), exit))
    }

    async fn kill(&self, id: TaskId) -> Result<(), ShellError> {
        let task = self.inner.task(id)?;
        if task.request_end(EndCause::Killed(KillCause::Requested), false) {
            return Ok(());
        }
        let exit = task.lock().finished.clone();
        match exit {
            Some(exit) => Err(ShellError::AlreadyFinished {
                id,
                exit: Box::new(exit),
            }),
            None => Ok(()),
        }
    }

    async fn wait(&self, id: TaskId) -> Result<ExitInfo, ShellError> {
        let task = self.inner.task(id)?;
        task.finished().await.ok_or(ShellError::Disposed)
    }

    async fn release(&self, id: TaskId) -> Result<ExitInfo, ShellError> {
        let task = self.inner.task(id)?;
        task.request_end(EndCause::Killed(KillCause::Requested), false);
        let exit = task.finished().await.ok_or(ShellError::Disposed)?;
        task.settled.cancelled().await;
        self.inner.remove(id);
        Ok(exit)
    }

    fn list(&self) -> Vec<TaskInfo> {
        // A disposed executor's table is empty, so it lists nothing.
        let tasks: Vec<Arc<Task>> = self.inner.lock().tasks.values().cloned().collect();
        tasks.iter().map(|t| t.info()).collect()
    }

    fn owner_of(&self, id: TaskId) -> Option<String> {
        let table = self.inner.lock();
        table.tasks.get(&id).and_then(|t| t.owner.clone())
    }

    fn on_task_done(&self, listener: TaskDoneListener) -> TaskDoneSubscription {
        self.inner.listeners.subscribe(listener)
    }
}
