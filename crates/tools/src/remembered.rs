//! Remembered rules: the "always" answers a user gave, kept per project so the next session
//! there does not ask again. A provider keeps them outside the repository (the user's data
//! directory): a rule a model could write into the project would let it allow itself.

use std::path::{Path, PathBuf};

/// Where a project's "always" answers are kept.
pub trait RememberedRules: Send + Sync + std::fmt::Debug + 'static {
    /// The allow rules remembered for the project `cwd` belongs to, oldest first.
    fn rules(&self, cwd: &Path) -> Vec<String>;

    /// Remembers the allow rule `rule` for the project `cwd` belongs to; that project.
    fn remember(&self, cwd: &Path, rule: &str) -> Result<PathBuf, String>;
}
