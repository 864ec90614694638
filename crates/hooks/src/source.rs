//! Where a session's hooks come from: the user's own, and those of the session's project
//! that the user trusted in their exact content. A session asks at its start and at each
//! turn, so a project file trusted meanwhile runs from the next turn and one changed since
//! it was trusted stops running.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::hooks::{Hooks, NoHooks};

/// A project's hook file as it is now.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProjectFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its content's SHA-256, hex: what trust is given to.
    pub sha256: String,
    /// What it would run, one line a handler (`PreToolUse Bash: ./guard.sh`), for the
    /// question that asks to trust it.
    pub runs: Vec<String>,
}

/// The hooks a session runs now.
#[derive(Clone)]
pub struct HookSet {
    /// All of them together.
    pub hooks: Arc<dyn Hooks>,
    /// The project's files among them.
    pub trusted: Vec<ProjectFile>,
}

impl Default for HookSet {
    fn default() -> HookSet {
        HookSet {
            hooks: Arc::new(NoHooks),
            trusted: Vec::new(),
        }
    }
}

/// Trust could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file changed since it was shown: what the user saw is not what would run.
    #[error("{} changed since it was shown; it is not trusted", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
    },
    /// The trust could not be written.
    #[error("cannot record the trust of {}: {reason}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The hooks of sessions, by the directory they work in.
pub trait HookSource: Send + Sync + 'static {
    /// The hooks a session working in `cwd` runs now.
    fn hooks(&self, cwd: &Path) -> HookSet;

    /// The hooks of `files` alone (those still as they were trusted): what a session runs
    /// at its start for files trusted after it started.
    fn of_files(&self, cwd: &Path, files: &[ProjectFile]) -> Arc<dyn Hooks>;

    /// The project's hook files seen from `cwd` that would run something but are not
    /// trusted in their current content.
    fn untrusted(&self, cwd: &Path) -> Vec<ProjectFile>;

    /// Trusts `file` in the content it was shown with.
    fn trust(&self, file: &ProjectFile) -> Result<(), TrustError>;
}

/// The same hooks for every session, and no project files: for embedders and tests.
pub struct FixedHooks(pub Arc<dyn Hooks>);

impl HookSource for FixedHooks {
    fn hooks(&self, _cwd: &Path) -> HookSet {
        HookSet {
            hooks: self.0.clone(),
            trusted: Vec::new(),
        }
    }

    fn of_files(&self, _cwd: &Path, _files: &[ProjectFile]) -> Arc<dyn Hooks> {
        Arc::new(NoHooks)
    }

    fn untrusted(&self, _cwd: &Path) -> Vec<ProjectFile> {
        Vec::new()
    }

    fn trust(&self, file: &ProjectFile) -> Result<(), TrustError> {
        Err(TrustError::Write {
            path: file.path.clone(),
            reason: "these hooks are fixed: they trust no project file".into(),
        })
    }
}
