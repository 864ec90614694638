//! How contexts are built: the settings the composition root passes in.

use std::path::PathBuf;
use std::time::Duration;

/// The budget all instruction files share, in bytes.
pub const INSTRUCTIONS_LIMIT_BYTES: usize = 32 * 1024;

/// Where the date of the environment block comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Today {
    /// The local date of the machine's time zone.
    #[default]
    Local,
    /// A fixed `YYYY-MM-DD` (tests and snapshots).
    Fixed(String),
}

/// The context service's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextConfig {
    /// Replaces the built-in prompt; relative paths are under the session's directory.
    pub system_prompt_file: Option<PathBuf>,
    /// Whether `AGENTS.md` (or `CLAUDE.md`) files from the git root down to the cwd are read.
    pub project_instructions: bool,
    /// The user's own instruction file (`$XDG_CONFIG_HOME/dsh/AGENTS.md`), read first.
    pub user_instructions: Option<PathBuf>,
    /// The budget the instruction files share.
    pub limit_bytes: usize,
    /// The shell the bash tool runs, as the environment block names it.
    pub shell: String,
    /// The date's source.
    pub today: Today,
    /// How long `git status` may take before the tree's state is left unsaid; zero never
    /// runs it.
    pub git_timeout: Duration,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            system_prompt_file: None,
            project_instructions: true,
            user_instructions: None,
            limit_bytes: INSTRUCTIONS_LIMIT_BYTES,
            shell: "bash".to_owned(),
            today: Today::Local,
            git_timeout: Duration::from_secs(1),
        }
    }
}
