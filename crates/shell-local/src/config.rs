//! The provider's configuration and its validation: a bad value builds nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a [`crate::LocalShellExecutor`] runs commands. [`LocalShellConfig::default`] gives the
/// documented defaults; [`crate::LocalShellExecutor::new`] validates every field.
#[derive(Clone, Debug)]
pub struct LocalShellConfig {
    /// The shell: a path, or a bare name looked up on `PATH` once at construction.
    pub shell: PathBuf,
    /// Where commands run by default; `None` is dsh's cwd at construction.
    pub default_workdir: Option<PathBuf>,
    /// A foreground command's deadline when none is asked for.
    pub default_timeout: Duration,
    /// No deadline may exceed this.
    pub max_timeout: Duration,
    /// The in-memory tail of a task when none is asked for.
    pub output_cap: usize,
    /// No tail may exceed this.
    pub max_output_cap: usize,
    /// A spill file stops growing at this size.
    pub spill_cap: u64,
    /// Where the private spill directory is made; `None` is the OS temp directory.
    pub spill_root: Option<PathBuf>,
    /// How long a group has between SIGTERM and SIGKILL.
    pub term_grace: Duration,
    /// How long the pipe is read after the leader exited.
    pub drain_grace: Duration,
    /// Running and terminating tasks allowed at once.
    pub max_running_tasks: usize,
    /// Finished tasks kept readable; the earliest finished is evicted beyond it. At least 1.
    pub max_finished_tasks: usize,
    /// Upper bound of one `read_output`.
    pub max_read: usize,
    /// The sum of every live task's tail cap may not exceed this.
    pub max_total_output: usize,
    /// Variables whose names contain one of these (case-insensitively) are kept from children.
    pub env_scrub: Vec<String>,
    /// Exact names exempt from the scrub.
    pub env_keep: Vec<String>,
    /// Exact names always removed from children (the model API key's variable, for one).
    pub env_remove: Vec<String>,
    /// The program to start as the watchdog that ends every task's processes if dsh dies
    /// without shutting down (SIGKILL): a binary whose `main` calls
    /// [`watchdog::run_if_requested`](crate::watchdog::run_if_requested) first — the dsh
    /// binary. `None` (the default) runs without one.
    pub watchdog: Option<PathBuf>,
    /// The program a sandboxed command starts through: a binary whose `main` calls
    /// [`sandbox::run_if_requested`](crate::sandbox::run_if_requested) first — the dsh
    /// binary. `None` (the default) refuses every sandboxed request.
    pub sandbox_helper: Option<PathBuf>,
    /// Test seam: records or replaces the group signals the executor sends.
    #[doc(hidden)]
    pub signaller: Option<std::sync::Arc<dyn crate::signal::Signaller>>,
}

impl Default for LocalShellConfig {
    fn default() -> LocalShellConfig {
        LocalShellConfig {
            shell: PathBuf::from("bash"),
            default_workdir: None,
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            output_cap: 64 * 1024,
            max_output_cap: 16 * 1024 * 1024,
            spill_cap: 64 * 1024 * 1024,
            spill_root: None,
            term_grace: Duration::from_secs(2),
            drain_grace: Duration::from_millis(500),
            max_running_tasks: 1024,
            max_finished_tasks: 256,
            max_read: 1024 * 1024,
            max_total_output: 256 * 1024 * 1024,
            env_scrub: ["KEY", "SECRET", "TOKEN", "PASSWORD"]
                .map(String::from)
                .to_vec(),
            env_keep: Vec::new(),
            env_remove: Vec::new(),
            watchdog: None,
            sandbox_helper: None,
            signaller: None,
        }
    }
}

/// Why a configuration was refused. Nothing is built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalConfigError {
    /// A field breaks its constraint.
    #[error("invalid shell configuration: {field} {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The shell was not found or is not an executable file.
    #[error("shell {} not found: {reason}", shell.display())]
    ShellNotFound {
        /// The shell as configured.
        shell: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// No tokio runtime to run supervisors on.
    #[error("the shell executor must be built inside a tokio runtime")]
    NoRuntime,
}

/// A configuration whose every field was checked, with the defaults filled in.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub shell: PathBuf,
    pub default_workdir: PathBuf,
    pub spill_root: PathBuf,
    pub config: LocalShellConfig,
    /// dsh has a controlling terminal (checked once, here): commands then start in a new
    /// session, away from it.
    pub has_terminal: bool,
}

fn invalid(field: &'static str, reason: impl Into<String>) -> LocalConfigError {
    LocalConfigError::Invalid {
        field,
        reason: reason.into(),
    }
}

impl LocalShellConfig {
    pub(crate) fn check(self) -> Result<Checked, LocalConfigError> {
        let c = &self;
        if c.max_timeout.is_zero() {
            return Err(invalid("max_timeout", "must be longer than zero"));
        }
        if c.default_timeout.is_zero() || c.default_timeout > c.max_timeout {
            return Err(invalid("default_timeout", "must be > 0 and ≤ max_timeout"));
        }
        if c.max_output_cap == 0 {
            return Err(invalid("max_output_cap", "must be at least 1 byte"));
        }
        if c.output_cap == 0 || c.output_cap > c.max_output_cap {
            return Err(invalid("output_cap", "must be ≥ 1 and ≤ max_output_cap"));
        }
        if c.spill_cap < c.output_cap as u64 {
            return Err(invalid("spill_cap", "must be ≥ output_cap"));
        }
        if c.term_grace.is_zero() || c.term_grace > Duration::from_secs(60) {
            return Err(invalid("term_grace", "must be > 0 and ≤ 60 s"));
        }
        if c.drain_grace.is_zero() || c.drain_grace > Duration::from_secs(10) {
            return Err(invalid("drain_grace", "must be > 0 and ≤ 10 s"));
        }
        if c.max_running_tasks == 0 {
            return Err(invalid("max_running_tasks", "must be at least 1"));
        }
        if c.max_finished_tasks == 0 {
            return Err(invalid("max_finished_tasks", "must be at least 1"));
        }
        if c.max_read < 4 {
            return Err(invalid("max_read", "must be at least 4 bytes"));
        }
        if c.max_total_output < c.output_cap {
            return Err(invalid("max_total_output", "must be ≥ output_cap"));
        }
        let default_workdir = match &c.default_workdir {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| invalid("default_workdir", format!("dsh's cwd is unusable: {e}")))?,
        };
        if !default_workdir.is_absolute() || !default_workdir.is_dir() {
            return Err(invalid(
                "default_workdir",
                format!(
                    "{} is not an absolute, existing directory",
                    default_workdir.display()
                ),
            ));
        }
        let spill_root = c.spill_root.clone().unwrap_or_else(std::env::temp_dir);
        if !spill_root.is_dir() {
            return Err(invalid(
                "spill_root",
                format!("{} is not an existing directory", spill_root.display()),
            ));
        }
        let shell = find_shell(&c.shell)?;
        Ok(Checked {
            shell,
            default_workdir,
            spill_root,
            config: self,
            has_terminal: has_controlling_terminal(),
        })
    }
}

/// Whether this process has a controlling terminal: `/dev/tty` opens only then.
pub(crate) fn has_controlling_terminal() -> bool {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        "/dev/tty",
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .is_ok()
}

/// The shell as an absolute path to an executable file.
fn find_shell(shell: &Path) -> Result<PathBuf, LocalConfigError> {
    use std::os::unix::fs::PermissionsExt;
    let not_found = |reason: &str| LocalConfigError::ShellNotFound {
        shell: shell.to_path_buf(),
        reason: reason.to_owned(),
    };
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if shell.as_os_str().is_empty() {
        return Err(not_found("the name is empty"));
    }
    if shell.components().count() > 1 || shell.is_absolute() {
        let absolute = std::path::absolute(shell).map_err(|e| not_found(&e.to_string()))?;
        return if executable(&absolute) {
            Ok(absolute)
        } else {
            Err(not_found("not an executable file"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(shell))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| not_found("not on PATH"))
}
