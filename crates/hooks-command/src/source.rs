//! `ProjectHooks`: the hooks of a session by its directory — the user's own configuration,
//! then the project's files the user trusted in their exact content — read again at each
//! session start and turn, so trust given meanwhile counts and a file changed since it was
//! trusted stops running.

use std::path::Path;
use std::sync::Arc;

use dsh_hooks::{HookSet, HookSource, Hooks, ProjectFile, TrustError};
use dsh_shell::{SandboxPolicy, ShellExecutor};

use crate::config::HookConfig;
use crate::project::{ReadFile, files};
use crate::run::CommandHooks;
use crate::trust::{TrustFile, digest};

/// The hooks of the user's configuration and of trusted project files, run as commands.
pub struct ProjectHooks {
    user: HookConfig,
    claude: bool,
    trust: TrustFile,
    executor: Arc<dyn ShellExecutor>,
    sandbox: SandboxPolicy,
}

impl ProjectHooks {
    /// The user's hooks `user`; project files trusted in `trust`; `.claude/settings.json`
    /// read when `claude`; handlers run through `executor`, sandboxed ones under `sandbox`.
    pub fn new(
        user: HookConfig,
        claude: bool,
        trust: TrustFile,
        executor: Arc<dyn ShellExecutor>,
        sandbox: SandboxPolicy,
    ) -> ProjectHooks {
        ProjectHooks {
            user,
            claude,
            trust,
            executor,
            sandbox,
        }
    }

    /// The project's files seen from `cwd`; one that does not read runs nothing.
    fn files(&self, cwd: &Path) -> Vec<ReadFile> {
        files(cwd, self.claude, &self.trust).unwrap_or_else(|e| {
            tracing::warn!("the project's hooks do not run: {e}");
            Vec::new()
        })
    }

    fn commands(&self, config: HookConfig) -> Arc<dyn Hooks> {
        Arc::new(CommandHooks::new(
            config,
            self.executor.clone(),
            self.sandbox.clone(),
        ))
    }
}

impl HookSource for ProjectHooks {
    fn hooks(&self, cwd: &Path) -> HookSet {
        let mut config = self.user.clone();
        let mut trusted = Vec::new();
        for file in self.files(cwd) {
            if file.trusted && !file.config.is_empty() {
                trusted.push(file.described());
                config.extend(file.config);
            }
        }
        HookSet {
            hooks: self.commands(config),
            trusted,
        }
    }

    fn of_files(&self, cwd: &Path, wanted: &[ProjectFile]) -> Arc<dyn Hooks> {
        let mut config = HookConfig::default();
        for file in self.files(cwd) {
            let same = |w: &ProjectFile| &w.path == file.source.path() && w.sha256 == file.sha256;
            if file.trusted && wanted.iter().any(same) {
                config.extend(file.config);
            }
        }
        self.commands(config)
    }

    fn untrusted(&self, cwd: &Path) -> Vec<ProjectFile> {
        self.files(cwd)
            .iter()
            .filter(|file| !file.trusted && !file.config.is_empty())
            .map(ReadFile::described)
            .collect()
    }

    fn trust(&self, file: &ProjectFile) -> Result<(), TrustError> {
        // What the user read must be what runs: the content is read again and compared.
        let now = std::fs::read(&file.path).map(|bytes| digest(&bytes));
        if now.as_deref().ok() != Some(file.sha256.as_str()) {
            return Err(TrustError::Changed {
                path: file.path.clone(),
            });
        }
        self.trust
            .trust(&file.path, &file.sha256)
            .map_err(|e| TrustError::Write {
                path: file.path.clone(),
                reason: e.to_string(),
            })
    }
}
