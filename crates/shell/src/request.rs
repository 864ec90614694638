//! Requests, specs and `resolve`: the one place where defaults and caps are applied.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;

use crate::error::ShellError;
use crate::sandbox::SandboxPolicy;

/// The longest command the kernel accepts as one `-c` argument.
pub const MAX_COMMAND_BYTES: usize = 131_071;

/// What a consumer asks for. Every field but `command` may be left at its default.
#[derive(Clone, Debug, Default)]
pub struct ShellExecRequest {
    /// The `bash -c` text.
    pub command: String,
    /// Absolute, or relative to the provider's default directory.
    pub workdir: Option<PathBuf>,
    /// The deadline.
    pub timeout: Option<Duration>,
    /// Bytes of in-memory tail.
    pub output_cap: Option<usize>,
    /// Start in the background.
    pub background: bool,
    /// An opaque owner token, stored verbatim.
    pub owner: Option<String>,
    /// Bytes for the child's stdin; `None` reads `/dev/null`.
    pub stdin: Option<Bytes>,
    /// Environment additions, applied last.
    pub env: BTreeMap<String, String>,
    /// What the command may write and reach (default: no sandbox).
    pub sandbox: SandboxPolicy,
}

impl ShellExecRequest {
    /// A request for `command` with every other field defaulted.
    pub fn new(command: impl Into<String>) -> ShellExecRequest {
        ShellExecRequest {
            command: command.into(),
            ..ShellExecRequest::default()
        }
    }

    /// With a working directory.
    pub fn workdir(mut self, workdir: impl Into<PathBuf>) -> Self {
        self.workdir = Some(workdir.into());
        self
    }

    /// With a deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// With an in-memory tail of `bytes`.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = Some(bytes);
        self
    }

    /// In the background.
    pub fn background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// With an owner token.
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// With stdin bytes.
    pub fn stdin(mut self, stdin: impl Into<Bytes>) -> Self {
        self.stdin = Some(stdin.into());
        self
    }

    /// With one more environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// In a sandbox.
    pub fn sandbox(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox = policy;
        self
    }
}

/// What `run` and `start` act on: every field explicit. No `Default`, no builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellExecSpec {
    /// The `bash -c` text.
    pub command: String,
    /// Absolute.
    pub workdir: PathBuf,
    /// Always `Some` for a foreground spec.
    pub timeout: Option<Duration>,
    /// Bytes of in-memory tail, ≥ 1.
    pub output_cap: usize,
    /// Background or foreground.
    pub background: bool,
    /// Always present, possibly `None`.
    pub owner: Option<String>,
    /// Bytes for stdin.
    pub stdin: Option<Bytes>,
    /// Environment additions.
    pub env: BTreeMap<String, String>,
    /// What the command may write and reach.
    pub sandbox: SandboxPolicy,
}

impl ShellExecSpec {
    /// A spec with every field given.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        command: String,
        workdir: PathBuf,
        timeout: Option<Duration>,
        output_cap: usize,
        background: bool,
        owner: Option<String>,
        stdin: Option<Bytes>,
        env: BTreeMap<String, String>,
        sandbox: SandboxPolicy,
    ) -> ShellExecSpec {
        ShellExecSpec {
            command,
            workdir,
            timeout,
            output_cap,
            background,
            owner,
            stdin,
            env,
            sandbox,
        }
    }

    /// The invariants `run` and `start` re-check on a hand-built spec.
    pub fn check(&self) -> Result<(), ShellError> {
        if !self.workdir.is_absolute() {
            return Err(invalid("workdir", "must be absolute"));
        }
        if self.output_cap == 0 {
            return Err(invalid("output_cap", "must be at least 1 byte"));
        }
        if !self.background && self.timeout.is_none() {
            return Err(invalid("timeout", "a foreground spec needs a deadline"));
        }
        Ok(())
    }
}

/// A provider's defaults and maximums for [`resolve`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveLimits {
    /// Where commands run when no workdir is given; relative workdirs join onto it. Absolute.
    pub default_workdir: PathBuf,
    /// A foreground command's deadline when none is given.
    pub default_timeout: Duration,
    /// No deadline may exceed this.
    pub max_timeout: Duration,
    /// The in-memory tail when none is given.
    pub default_output_cap: usize,
    /// No tail may exceed this.
    pub max_output_cap: usize,
}

/// Turns a request into a spec: validates it, applies defaults, caps and joins, copies the
/// owner verbatim. Pure: no filesystem access, no side effect.
pub fn resolve(
    request: ShellExecRequest,
    limits: &ResolveLimits,
) -> Result<ShellExecSpec, ShellError> {
    if request.command.is_empty() {
        return Err(invalid("command", "is empty"));
    }
    if request.command.contains('\0') {
        return Err(invalid("command", "contains a NUL byte"));
    }
    if request.command.len() > MAX_COMMAND_BYTES {
        return Err(invalid(
            "command",
            &format!(
                "is {} bytes; at most {MAX_COMMAND_BYTES} fit in one shell argument",
                request.command.len()
            ),
        ));
    }
    let workdir = match request.workdir {
        None => limits.default_workdir.clone(),
        Some(dir) => {
            if dir.as_os_str().as_encoded_bytes().contains(&0) {
                return Err(invalid("workdir", "contains a NUL byte"));
            }
            lexical_join(&limits.default_workdir, &dir)
        }
    };
    if request.timeout == Some(Duration::ZERO) {
        return Err(invalid("timeout", "must be longer than zero"));
    }
    let timeout = match (request.timeout, request.background) {
        (Some(t), _) => Some(t.min(limits.max_timeout)),
        (None, false) => Some(limits.default_timeout.min(limits.max_timeout)),
        (None, true) => None,
    };
    let output_cap = match request.output_cap {
        Some(0) => return Err(invalid("output_cap", "must be at least 1 byte")),
        Some(cap) => cap.min(limits.max_output_cap),
        None => limits.default_output_cap.min(limits.max_output_cap),
    };
    for (key, value) in &request.env {
        if key.is_empty() || key.contains('=') || key.contains('\0') {
            return Err(invalid("env", &format!("{key:?} is not a variable name")));
        }
        if value.contains('\0') {
            return Err(invalid(
                "env",
                &format!("the value of {key} contains a NUL byte"),
            ));
        }
    }
    let sandbox = match request.sandbox {
        SandboxPolicy::WorkspaceWrite { writable, network } => {
            let mut joined = Vec::with_capacity(writable.len());
            for dir in writable {
                if dir.as_os_str().as_encoded_bytes().contains(&0) {
                    return Err(invalid(
                        "sandbox",
                        "a writable directory contains a NUL byte",
                    ));
                }
                joined.push(lexical_join(&limits.default_workdir, &dir));
            }
            SandboxPolicy::WorkspaceWrite {
                writable: joined,
                network,
            }
        }
        policy @ (SandboxPolicy::ReadOnly | SandboxPolicy::FullAccess) => policy,
    };
    Ok(ShellExecSpec {
        command: request.command,
        workdir,
        timeout,
        output_cap,
        background: request.background,
        owner: request.owner,
        stdin: request.stdin,
        env: request.env,
        sandbox,
    })
}

fn invalid(field: &'static str, reason: &str) -> ShellError {
    ShellError::InvalidRequest {
        field,
        reason: reason.to_owned(),
    }
}

/// `dir` joined onto `base`, with `.` and `..` folded lexically (never above the root).
fn lexical_join(base: &Path, dir: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in base.join(dir).components() {
        match component {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
