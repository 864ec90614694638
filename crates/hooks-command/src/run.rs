//! Running an event's handlers: each a command through the shell executor, concurrently,
//! with its timeout, its stdin the event's JSON; their answers folded.
//!
//! The executor merges a command's stdout and stderr, and a hook's answer needs them apart:
//! the command runs after `exec 2>"$DSH_HOOK_STDERR"`, a file in a directory of its own that
//! its sandbox may write, read back once it ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use dsh_hooks::{HandlerAnswer, HandlerRun, HookEvent, HookInput, HookRun, HookVerdict, Hooks};
use dsh_kernel::CancellationToken;
use dsh_shell::{EndCause, SandboxPolicy, ShellExecSpec, ShellExecutor};

use crate::config::{Handler, HookConfig};

/// The most of a handler's stdout and stderr read.
const OUTPUT_CAP: usize = 1024 * 1024;

/// The owner token of hook commands, so a listing tells them from the model's.
pub const OWNER: &str = "dsh-hooks";

/// Runs configured hooks as commands.
pub struct CommandHooks {
    config: HookConfig,
    executor: Arc<dyn ShellExecutor>,
    /// The policy a sandboxed handler runs under (the session's commands' own).
    sandbox: SandboxPolicy,
}

impl CommandHooks {
    /// Hooks of `config`, run through `executor`, sandboxed handlers under `sandbox`.
    pub fn new(
        config: HookConfig,
        executor: Arc<dyn ShellExecutor>,
        sandbox: SandboxPolicy,
    ) -> CommandHooks {
        CommandHooks {
            config,
            executor,
            sandbox,
        }
    }

    fn matching(&self, event: HookEvent, subjects: &[&str]) -> Vec<&Handler> {
        self.config
            .events
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|group| group.matcher.matches(subjects))
            .flat_map(|group| group.handlers.iter())
            .collect()
    }

    async fn run_one(
        &self,
        handler: &Handler,
        event: HookEvent,
        stdin: Bytes,
        cwd: &Path,
        cancel: &CancellationToken,
    ) -> HandlerRun {
        let mut run = HandlerRun {
            command: handler.command.clone(),
            ..HandlerRun::default()
        };
        let dir = match tempfile::Builder::new().prefix("dsh-hook-").tempdir() {
            Ok(dir) => dir,
            Err(e) => {
                run.not_started = Some(format!("no directory for its stderr: {e}"));
                return run;
            }
        };
        let stderr = dir.path().join("stderr");
        let mut env = BTreeMap::new();
        env.insert("DSH_HOOK_STDERR".to_owned(), stderr.display().to_string());
        env.insert("DSH_HOOK_EVENT".to_owned(), event.as_str().to_owned());
        env.insert("DSH_PROJECT_DIR".to_owned(), cwd.display().to_string());
        env.insert("CLAUDE_PROJECT_DIR".to_owned(), cwd.display().to_string());
        let spec = ShellExecSpec {
            command: format!("exec 2>\"$DSH_HOOK_STDERR\"\n{}", handler.command),
            workdir: cwd.to_path_buf(),
            timeout: Some(handler.timeout),
            output_cap: OUTPUT_CAP,
            background: false,
            owner: Some(OWNER.to_owned()),
            stdin: Some(stdin),
            env,
            sandbox: self.policy(handler, dir.path(), cwd),
        };
        let started = std::time::Instant::now();
        let ran = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                run.not_started = Some("was cancelled with its turn".into());
                return run;
            }
            ran = self.executor.run(spec) => ran,
        };
        run.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match ran {
            Ok(out) => {
                run.exit_code = out.exit.code;
                run.timed_out = matches!(out.exit.end, EndCause::TimedOut { .. });
                run.stdout = String::from_utf8_lossy(&out.tail).into_owned();
                run.stderr = read_capped(&stderr);
            }
            Err(e) => run.not_started = Some(e.to_string()),
        }
        run
    }

    /// The handler's sandbox: the session's commands' (the session's directory writable, a
    /// formatter may change files), with its stderr's directory writable too.
    fn policy(&self, handler: &Handler, stderr_dir: &Path, cwd: &Path) -> SandboxPolicy {
        if !handler.sandbox {
            return SandboxPolicy::FullAccess;
        }
        match &self.sandbox {
            SandboxPolicy::FullAccess => SandboxPolicy::FullAccess,
            SandboxPolicy::ReadOnly => SandboxPolicy::WorkspaceWrite {
                writable: vec![stderr_dir.to_path_buf()],
                network: false,
            },
            SandboxPolicy::WorkspaceWrite { writable, network } => {
                let mut writable: Vec<PathBuf> = writable.clone();
                writable.push(cwd.to_path_buf());
                writable.push(stderr_dir.to_path_buf());
                SandboxPolicy::WorkspaceWrite {
                    writable,
                    network: *network,
                }
            }
        }
    }
}

fn read_capped(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(mut bytes) => {
            bytes.truncate(OUTPUT_CAP);
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(_) => String::new(),
    }
}

#[async_trait]
impl Hooks for CommandHooks {
    fn wants(&self, event: HookEvent, subjects: &[&str]) -> bool {
        !self.matching(event, subjects).is_empty()
    }

    async fn run(&self, input: HookInput, cancel: CancellationToken) -> HookVerdict {
        let event = input.event();
        let subjects = input.subjects();
        let subjects: Vec<&str> = subjects.iter().map(String::as_str).collect();
        let handlers = self.matching(event, &subjects);
        if handlers.is_empty() {
            return HookVerdict::default();
        }
        let stdin = Bytes::from(input.to_json().to_string());
        tracing::debug!(event = %event, stdin = %String::from_utf8_lossy(&stdin), "running hooks");
        let runs = futures::future::join_all(handlers.iter().map(|handler| {
            self.run_one(handler, event, stdin.clone(), &input.common.cwd, &cancel)
        }))
        .await;
        let answers: Vec<HandlerAnswer> = runs
            .iter()
            .zip(&handlers)
            .map(|(run, handler)| {
                tracing::debug!(event = %event, command = %run.command, exit = ?run.exit_code, stdout = %run.stdout, "a hook answered");
                HandlerAnswer::read(event, run, handler.on_error)
            })
            .collect();
        let reports = runs
            .iter()
            .zip(&answers)
            .map(|(run, answer)| HookRun {
                command: run.command.clone(),
                exit_code: run.exit_code,
                elapsed_ms: run.elapsed_ms,
                decision: answer.decision().to_owned(),
                error: answer.error.clone(),
            })
            .collect();
        HookVerdict {
            runs: reports,
            ..HookVerdict::fold(answers)
        }
    }
}
