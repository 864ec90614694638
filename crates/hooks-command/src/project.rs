//! A project's hook files: the nearest `.dsh/hooks.toml` from a session's directory up, and
//! the nearest `.claude/settings.json` (unless the user turned that off), each read with its
//! content's digest and whether the user trusted that content.

use std::path::{Path, PathBuf};

use crate::config::{ConfigError, HookConfig, Source};
use crate::trust::{TrustFile, digest};

/// A project's hook file, read.
#[derive(Clone, Debug)]
pub struct ReadFile {
    /// Where it is.
    pub source: Source,
    /// Its content's SHA-256.
    pub sha256: String,
    /// What it configures.
    pub config: HookConfig,
    /// What of it dsh skips (Claude Code's other events).
    pub warnings: Vec<String>,
    /// Whether the user trusted this content.
    pub trusted: bool,
}

impl ReadFile {
    /// The file as a trust question shows it: one line a handler.
    pub fn described(&self) -> dsh_hooks::ProjectFile {
        dsh_hooks::ProjectFile {
            path: self.source.path().clone(),
            sha256: self.sha256.clone(),
            runs: self
                .config
                .handlers()
                .map(|(event, group, handler)| match group.pattern.as_str() {
                    "" | "*" => format!("{event}: {}", handler.command),
                    pattern => format!("{event} {pattern}: {}", handler.command),
                })
                .collect(),
        }
    }
}

/// The project's hook files seen from `cwd`; `claude` reads `.claude/settings.json` too.
/// A file that cannot be read or does not parse is an error naming it.
pub fn files(cwd: &Path, claude: bool, trust: &TrustFile) -> Result<Vec<ReadFile>, ConfigError> {
    let nearest = |relative: &str| -> Option<PathBuf> {
        cwd.ancestors()
            .map(|dir| dir.join(relative))
            .find(|p| p.is_file())
    };
    let mut files = Vec::new();
    if let Some(path) = nearest(".dsh/hooks.toml") {
        let bytes = read(&path)?;
        let table: toml::Value = toml::from_str(&String::from_utf8_lossy(&bytes))
            .map_err(|e| shape(&path, e.to_string()))?;
        let source = Source::Project(path);
        let config = HookConfig::from_toml(&table, &source)?;
        files.push(file(trust, source, &bytes, config, Vec::new()));
    }
    if claude && let Some(path) = nearest(".claude/settings.json") {
        let bytes = read(&path)?;
        let json: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| shape(&path, e.to_string()))?;
        let source = Source::Claude(path);
        let (config, warnings) = HookConfig::from_claude(&json, &source)?;
        files.push(file(trust, source, &bytes, config, warnings));
    }
    Ok(files)
}

fn file(
    trust: &TrustFile,
    source: Source,
    bytes: &[u8],
    config: HookConfig,
    warnings: Vec<String>,
) -> ReadFile {
    let sha256 = digest(bytes);
    ReadFile {
        trusted: trust.trusted(source.path(), &sha256),
        source,
        sha256,
        config,
        warnings,
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|e| shape(path, format!("cannot read it: {e}")))
}

fn shape(path: &Path, reason: String) -> ConfigError {
    ConfigError::File {
        file: path.display().to_string(),
        reason,
    }
}
