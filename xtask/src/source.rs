//! Files read by the gates, each at most once per invocation (xtask spec OUT-07).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::XtaskError;

/// A cache of root-relative files, read as (lossy) UTF-8 text.
pub struct Sources {
    root: PathBuf,
    cache: HashMap<String, Arc<str>>,
}

impl Sources {
    /// An empty cache over `root`.
    pub fn new(root: &Path) -> Sources {
        Sources {
            root: root.to_path_buf(),
            cache: HashMap::new(),
        }
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The text of `rel` (root-relative, `/`-separated). An unreadable file is an environment
    /// error naming the path.
    pub fn read(&mut self, rel: &str) -> Result<Arc<str>, XtaskError> {
        if let Some(text) = self.cache.get(rel) {
            return Ok(text.clone());
        }
        let bytes = std::fs::read(self.root.join(rel)).map_err(|e| XtaskError::io(rel, e))?;
        let text: Arc<str> = String::from_utf8_lossy(&bytes).into();
        self.cache.insert(rel.to_owned(), text.clone());
        Ok(text)
    }
}
