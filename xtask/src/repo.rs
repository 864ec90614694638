//! The repository a command works on: its root and the date it takes as today.

use std::path::{Path, PathBuf};

use crate::date::Date;
use crate::error::XtaskError;

/// An opened repository.
#[derive(Clone, Debug)]
pub struct Repo {
    root: PathBuf,
    today: Date,
}

impl Repo {
    /// Opens the repository at `root`, which must be an existing directory.
    pub fn open(root: &Path, today: Date) -> Result<Repo, XtaskError> {
        if !root.is_dir() {
            return Err(XtaskError::Usage(format!(
                "--root {}: not an existing directory",
                root.display()
            )));
        }
        Ok(Repo {
            root: root.to_path_buf(),
            today,
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The date taken as today (`XTASK_TODAY`, else today in UTC+14).
    pub fn today(&self) -> Date {
        self.today
    }
}
