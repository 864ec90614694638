//! The `bash` tool: foreground runs raced against the call's cancellation, background starts
//! released when their owning agent is disposed.

use crate::live::Live;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::Scope;
use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_shell::{RunOutput, SandboxPolicy, ShellExecRequest, ShellExecutor, TaskId};
use dsh_tools::{
    Effect, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolOutput, ToolResultView,
    ToolSchema,
};
use futures::future::BoxFuture;
use serde_json::json;

use crate::args::{self, BashArgs};
use crate::errors;
use crate::present;
use crate::render;
use crate::shared::{Sandbox, Shared, caller_token};

pub struct BashTool {
    pub shared: Shared,
}

impl Tool for BashTool {
    fn schema(&self) -> ToolSchema {
        crate::schema::bash()
    }

    fn name(&self) -> String {
        "bash".into()
    }

    fn guidance(&self) -> Option<String> {
        Some(include_str!("../prompts/bash.md").trim_end().to_owned())
    }

    fn parallel_safe(&self) -> bool {
        false
    }

    fn effect(&self, args: &serde_json::Value, _roots: &Roots) -> Effect {
        let leaving = args
            .get("outside_sandbox")
            .is_some_and(|reason| reason.as_str().is_some_and(|r| !r.trim().is_empty()));
        match self.shared.sandbox() {
            Sandbox::Confined if leaving => Effect::Escalate,
            Sandbox::Confined => Effect::Confined,
            // Asked about in every mode: never an unconfined run nobody agreed to.
            Sandbox::Missing => Effect::Unconfined,
            // Without a sandbox asked for there is nothing to leave: a command as any other.
            Sandbox::NotAsked => Effect::Execute,
        }
    }

    fn call(
        &self,
        args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let shared = self.shared.clone();
        Box::pin(async move { call(shared, args, cx).await })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        present::bash_call(call)
    }

    fn present_result(
        &self,
        call: &ToolCallRecord,
        result: &ToolResultRecord,
    ) -> Option<ToolResultView> {
        present::bash_result(call, result)
    }
}

/// `~` and `~/…` expand to dsh's `HOME`; a relative path joins the caller's session cwd when
/// there is one (many sessions share one executor, so the per-session default must come from
/// the caller); absent means the session cwd, else the executor's default.
fn workdir(raw: Option<&str>, session_cwd: Option<&Path>) -> Option<PathBuf> {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    let path = match raw {
        None => return session_cwd.map(Path::to_path_buf),
        Some("~") => home().unwrap_or_else(|| PathBuf::from("~")),
        Some(p) if p.starts_with("~/") => match home() {
            Some(home) => home.join(&p[2..]),
            None => PathBuf::from(p),
        },
        Some(p) => PathBuf::from(p),
    };
    if path.is_relative()
        && let Some(cwd) = session_cwd
    {
        return Some(cwd.join(path));
    }
    Some(path)
}

async fn call(
    shared: Shared,
    args: serde_json::Value,
    cx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let args: BashArgs = args::parse(args)?;
    args.check()?;
    let executor = shared.executor()?;
    let mut request =
        ShellExecRequest::new(args.command.clone()).background(args.run_in_background);
    request.workdir = workdir(args.workdir.as_deref(), cx.session_cwd());
    request.timeout = args
        .timeout_ms
        .map(|ms| Duration::from_millis(ms.unsigned_abs()));
    request.owner = caller_token(&cx);
    let confined = shared.sandbox() == Sandbox::Confined;
    request.sandbox = match confined && args.outside_sandbox.is_none() {
        true => sandbox_for(&shared.config.sandbox, cx.roots().as_ref()),
        // Leaving the sandbox was asked about and allowed (the gate answered before the
        // body runs; a run with no one to ask refused it).
        // No sandbox was asked for, or none can be had here: the gate asked about the call
        // as a command that may do anything, and the start said the sandbox is missing.
        false => SandboxPolicy::FullAccess,
    };
    if !args.run_in_background {
        request.output_cap = Some(shared.config.tail_bytes.max(1));
    }
    let spec = executor.resolve(request).map_err(errors::start_error)?;
    if args.run_in_background {
        background(executor, spec, &cx).await
    } else {
        foreground(&shared, executor, spec, &cx).await
    }
}

/// What the model is told when a confined command failed the way the sandbox makes one fail.
const SANDBOX_NOTE: &str = "\n[note: this command ran in the sandbox, which refuses writes outside the session's directories and network sockets; if it needs them, run it again with `outside_sandbox` saying why, and the user is asked]";

/// Whether `output` reads like the sandbox refused something: a write outside, or a socket.
fn refused_by_sandbox(output: &[u8]) -> bool {
    let text = String::from_utf8_lossy(output);
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ]
    .iter()
    .any(|said| text.contains(said))
}

/// The configured policy for a call of the session with `roots`: its directories are
/// writable too.
fn sandbox_for(policy: &SandboxPolicy, roots: Option<&Roots>) -> SandboxPolicy {
    match policy {
        SandboxPolicy::WorkspaceWrite { writable, network } => {
            let mut dirs: Vec<PathBuf> = roots
                .map(|r| r.all().map(Path::to_path_buf).collect())
                .unwrap_or_default();
            dirs.extend(writable.iter().cloned());
            SandboxPolicy::WorkspaceWrite {
                writable: dirs,
                network: *network,
            }
        }
        other @ (SandboxPolicy::ReadOnly | SandboxPolicy::FullAccess) => other.clone(),
    }
}

/// Registers, on its own child of the caller's agent scope, a disposer that releases `id`.
/// Fails once the agent's disposal has begun.
fn release_with_agent(scope: &Scope, executor: &Arc<dyn ShellExecutor>, id: TaskId) -> bool {
    let Ok(child) = scope.child(&id.to_string()) else {
        return false;
    };
    let executor = executor.clone();
    // A task already gone, or an executor disposed, ends this quietly.
    child
        .add_disposer(move || async move {
            let _ = executor.release(id).await;
        })
        .is_ok()
}

async fn background(
    executor: Arc<dyn ShellExecutor>,
    spec: dsh_shell::ShellExecSpec,
    cx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let id = executor.start(spec).await.map_err(errors::start_error)?;
    if let Some(scope) = cx.caller_scope()
        && !release_with_agent(&scope, &executor, id)
    {
        let _ = executor.release(id).await;
        return Err(ToolError::new(
            errors::CANCELLED,
            "agent is shutting down; background task not started",
        ));
    }
    Ok(ToolOutput {
        content: format!("started background task {id}"),
        is_error: false,
        meta: Some(json!({ "task_id": id.to_string(), "background": true })),
    })
}

/// Keeps an agent's disposal waiting while a foreground command of this call still runs: a
/// cancelled run's group is ended inside the executor, and the disposer awaits the caller's
/// foreground tasks that remain.
struct InFlight {
    scope: Option<Scope>,
    key: Option<dsh_kernel::DisposerKey>,
}

impl InFlight {
    fn register(cx: &ToolContext, executor: &Arc<dyn ShellExecutor>) -> InFlight {
        let scope = cx.caller_scope();
        let owner = caller_token(cx);
        let key = scope.as_ref().and_then(|scope| {
            let executor = executor.clone();
            scope
                .add_disposer(move || async move {
                    for task in executor.list() {
                        if !task.background && executor.owner_of(task.id) == owner {
                            let _ = executor.wait(task.id).await;
                        }
                    }
                })
                .ok()
        });
        InFlight { scope, key }
    }
}

impl InFlight {
    /// The run returned: nothing is left to wait for. A call dropped or cancelled instead
    /// keeps its disposer, so the agent's disposal awaits the group's end.
    fn done(mut self) {
        if let (Some(scope), Some(key)) = (&self.scope, self.key.take()) {
            scope.remove_disposer(key);
        }
    }
}

async fn foreground(
    shared: &Shared,
    executor: Arc<dyn ShellExecutor>,
    spec: dsh_shell::ShellExecSpec,
    cx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let in_flight = InFlight::register(cx, &executor);
    // What the command prints is shown as it arrives, and kept: a cancelled call still tells
    // the model what had been printed.
    let live = Live::new(shared.config.head_bytes, shared.config.tail_bytes);
    let confined = !matches!(spec.sandbox, SandboxPolicy::FullAccess);
    let run = executor.run_streaming(spec, live.sink(cx));
    let out = tokio::select! {
        out = run => out,
        () = cx.cancellation().cancelled() => {
            return Err(ToolError::new(errors::CANCELLED, live.cancelled()));
        }
    };
    in_flight.done();
    let out = out.map_err(errors::start_error)?;
    let (mut content, complete) = render_foreground(shared, &*executor, &out).await;
    if confined && out.exit.code.is_some_and(|c| c != 0) && refused_by_sandbox(&out.tail) {
        content.push_str(SANDBOX_NOTE);
    }
    // A retained task whose output was shown whole is released now; one with hidden output
    // stays readable until its agent is disposed (or, outside any agent, until evicted).
    if out.retained {
        let release_now = match cx.caller_scope() {
            _ if complete => true,
            Some(scope) => !release_with_agent(&scope, &executor, out.task_id),
            None => false,
        };
        if release_now {
            let _ = executor.release(out.task_id).await;
        }
    }
    let exit = &out.exit;
    Ok(ToolOutput {
        content,
        is_error: false,
        meta: Some(json!({
            "task_id": out.task_id.to_string(),
            "exit_code": exit.code,
            "signal": exit.signal.as_ref().map(|s| s.name.clone()),
            "timed_out": exit.timed_out(),
            "truncated": exit.output.truncated,
            "total_bytes": exit.output.total_bytes,
            "stragglers_terminated": exit.stragglers_terminated,
        })),
    })
}

/// The result text, and whether it shows the whole stream.
async fn render_foreground(
    shared: &Shared,
    executor: &dyn ShellExecutor,
    out: &RunOutput,
) -> (String, bool) {
    let exit = &out.exit;
    if !exit.output.truncated {
        return (render::foreground_whole(&out.tail, exit), true);
    }
    let config = &shared.config;
    let keep = out.tail.len().min(config.tail_bytes);
    let tail = &out.tail[out.tail.len() - keep..];
    let tail_start = out.tail_start + (out.tail.len() - keep) as u64;
    let head = match executor
        .read_output(out.task_id, 0, config.head_bytes.max(1))
        .await
    {
        Ok(chunk) if chunk.start == 0 => chunk.bytes.to_vec(),
        _ => Vec::new(),
    };
    if head.len() as u64 >= tail_start {
        // Head and tail meet: the stream is shown once, whole.
        let mut whole = head.clone();
        whole.extend_from_slice(&tail[(head.len() as u64 - tail_start) as usize..]);
        return (render::foreground_whole(&whole, exit), true);
    }
    (
        render::foreground_cut(out.task_id, &head, tail, tail_start, exit),
        false,
    )
}
