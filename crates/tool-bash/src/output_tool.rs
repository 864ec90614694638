//! `bash_output` (stateless reads of a task's stream, optionally waiting for its end) and
//! `bash_kill` (ends a task, keeps its output readable).

use std::time::Duration;

use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_shell::{ShellError, ShellExecutor, TaskId};
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;

use crate::args::{self, KillArgs, OutputArgs};
use crate::errors;
use crate::present;
use crate::render;
use crate::shared::{Shared, reachable};

pub struct BashOutputTool {
    pub shared: Shared,
}

pub struct BashKillTool {
    pub shared: Shared,
}

fn status(executor: &dyn ShellExecutor, id: TaskId) -> String {
    executor
        .list()
        .into_iter()
        .find(|t| t.id == id)
        .map_or_else(|| "unknown".to_owned(), |t| render::state_phrase(&t.state))
}

async fn read(
    shared: Shared,
    args: serde_json::Value,
    cx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let args: OutputArgs = args::parse(args)?;
    args.check(shared.config.max_wait_ms)?;
    let executor = shared.executor()?;
    let id = reachable(&*executor, &args.task_id, &cx)?;
    if args.wait_ms > 0 {
        let wait = Duration::from_millis(args.wait_ms.unsigned_abs());
        tokio::select! {
            ended = tokio::time::timeout(wait, executor.wait(id)) => {
                if let Ok(Err(error)) = ended {
                    return Err(errors::task_error(&args.task_id, error));
                }
            }
            () = cx.cancellation().cancelled() => return Err(errors::cancelled()),
        }
    }
    let chunk = match executor
        .read_output(id, args.offset, shared.config.read_bytes.max(1))
        .await
    {
        Ok(chunk) => chunk,
        Err(ShellError::InvalidRequest { field: "since", .. }) => {
            let total = executor
                .read_output(id, 0, 1)
                .await
                .map_err(|e| errors::task_error(&args.task_id, e))?
                .total;
            return Err(errors::invalid(format!(
                "invalid offset: {} is beyond the end of the output ({total} bytes so far)",
                args.offset
            )));
        }
        Err(error) => return Err(errors::task_error(&args.task_id, error)),
    };
    let phrase = match &chunk.exit {
        Some(exit) => render::exit_phrase(exit),
        None => status(&*executor, id),
    };
    Ok(ToolOutput::text(render::output_read(&chunk, &phrase)))
}

async fn kill(
    shared: Shared,
    args: serde_json::Value,
    cx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let args: KillArgs = args::parse(args)?;
    args::check_task_id(&args.task_id)?;
    let executor = shared.executor()?;
    let id = reachable(&*executor, &args.task_id, &cx)?;
    match executor.kill(id).await {
        Ok(()) => {
            let phrase =
                match tokio::time::timeout(shared.config.kill_wait, executor.wait(id)).await {
                    Ok(Ok(exit)) => render::exit_phrase(&exit),
                    _ => "terminating".to_owned(),
                };
            Ok(ToolOutput::text(format!(
                "killed task {id}\n[status: {phrase}]"
            )))
        }
        Err(ShellError::AlreadyFinished { exit, .. }) => Ok(ToolOutput::text(format!(
            "task {id} had already finished\n[status: {}]",
            render::exit_phrase(&exit)
        ))),
        Err(error) => Err(errors::task_error(&args.task_id, error)),
    }
}

impl Tool for BashOutputTool {
    fn schema(&self) -> ToolSchema {
        crate::schema::bash_output(self.shared.config.max_wait_ms)
    }

    fn name(&self) -> String {
        "bash_output".into()
    }

    fn effect(&self, _args: &serde_json::Value, _roots: &Roots) -> Effect {
        Effect::Read
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(read(self.shared.clone(), args, cx))
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::task_call(
            call,
            "Read output of background task",
            dsh_tools::ToolKindHint::Read,
        )
    }

    fn present_result(
        &self,
        _call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::generic_result(result)
    }
}

impl Tool for BashKillTool {
    fn schema(&self) -> ToolSchema {
        crate::schema::bash_kill()
    }

    fn name(&self) -> String {
        "bash_kill".into()
    }

    /// Stopping one of the agent's own background tasks asks nobody: the user approved
    /// the command that started it.
    fn effect(&self, _args: &serde_json::Value, _roots: &Roots) -> Effect {
        Effect::Read
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(kill(self.shared.clone(), args, cx))
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::task_call(
            call,
            "Kill background task",
            dsh_tools::ToolKindHint::Execute,
        )
    }

    fn present_result(
        &self,
        _call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::generic_result(result)
    }
}
