//! Which of a project's hook files the user trusted, by their exact content: a project's
//! `.dsh/hooks.toml` or `.claude/settings.json` comes with the repository, so a model (or a
//! stranger's pull request) could write one, and its commands must not run until the user
//! read and trusted them. A changed file needs trust again.
//!
//! `<data>/trusted-hooks.jsonl`, append-only, one `{"path","sha256"}` a line (each one
//! `O_APPEND` write, so two dsh processes cannot lose each other's), in the data directory,
//! never in the repository.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file's name under the data directory.
pub const FILE: &str = "trusted-hooks.jsonl";

#[derive(Debug, Serialize, Deserialize)]
struct Line {
    path: String,
    sha256: String,
}

/// The trusted hook files of one data directory.
#[derive(Debug)]
pub struct TrustFile {
    path: PathBuf,
}

/// The hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TrustFile {
    /// The file under `data_dir`.
    pub fn new(data_dir: &Path) -> TrustFile {
        TrustFile {
            path: data_dir.join(FILE),
        }
    }

    /// Whether the file at `path` was trusted with exactly this content. A trust file that
    /// cannot be read trusts nothing (fails closed); a line that does not read is skipped.
    pub fn trusted(&self, path: &Path, sha256: &str) -> bool {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        let path = path.to_string_lossy();
        text.lines()
            .filter_map(|line| serde_json::from_str::<Line>(line).ok())
            .any(|line| line.path == path && line.sha256 == sha256)
    }

    /// Trusts the file at `path` with this content.
    pub fn trust(&self, path: &Path, sha256: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let line = Line {
            path: path.to_string_lossy().into_owned(),
            sha256: sha256.to_owned(),
        };
        let mut text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
        text.push('\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        file.write_all(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_content_trusted_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let trust = TrustFile::new(&dir.path().join("data"));
        let file = Path::new("/p/.dsh/hooks.toml");
        let first = digest(b"[[Stop]]");
        assert!(!trust.trusted(file, &first));
        trust.trust(file, &first).unwrap();
        assert!(trust.trusted(file, &first));
        assert!(!trust.trusted(file, &digest(b"[[Stop]] changed")));
        assert!(!trust.trusted(Path::new("/q/.dsh/hooks.toml"), &first));
    }
}
