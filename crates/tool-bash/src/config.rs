//! The tools' configuration.

use std::time::Duration;

use dsh_shell::SandboxPolicy;

/// How the bash tools render and wait. [`ToolBashConfig::default`] gives the documented
/// defaults.
#[derive(Clone, Debug)]
pub struct ToolBashConfig {
    /// Head of a truncated foreground output shown in the result.
    pub head_bytes: usize,
    /// Tail shown; also the foreground tail the tool asks the executor to keep.
    pub tail_bytes: usize,
    /// The limit of one `bash_output` read.
    pub read_bytes: usize,
    /// How long `bash_kill` waits for the task to end before answering.
    pub kill_wait: Duration,
    /// The upper bound of `bash_output`'s `wait_ms`.
    pub max_wait_ms: u64,
    /// The sandbox commands run in. For `WorkspaceWrite`, `writable` lists directories
    /// writable besides the calling session's roots, which each call adds.
    pub sandbox: SandboxPolicy,
}

impl Default for ToolBashConfig {
    fn default() -> ToolBashConfig {
        ToolBashConfig {
            head_bytes: 8 * 1024,
            tail_bytes: 24 * 1024,
            read_bytes: 32 * 1024,
            kill_wait: Duration::from_secs(5),
            max_wait_ms: 600_000,
            sandbox: SandboxPolicy::FullAccess,
        }
    }
}

/// The largest `timeout_ms` a call may ask for.
pub const MAX_TIMEOUT_MS: i64 = 600_000;
