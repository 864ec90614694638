//! The hooks a session runs: `[hooks]` of the user's own configuration file, then the
//! project's `.dsh/hooks.toml` and `.claude/settings.json` (the nearest of each from the
//! session's directory up) when the user trusted their exact content; and `dsh hooks`, which
//! lists them and trusts a project's.

use std::path::{Path, PathBuf};

use dsh_hooks_command::{HookConfig, Source};

use crate::exit::Failure;
use crate::settings::Settings;
use crate::trusted_hooks::{TrustFile, digest};

/// A project's hook file, read.
pub struct ProjectFile {
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

impl ProjectFile {
    /// The file at `source` whose bytes are `bytes`, with what it configures.
    fn read(
        trust: &TrustFile,
        source: Source,
        bytes: &[u8],
        config: HookConfig,
        warnings: Vec<String>,
    ) -> ProjectFile {
        let sha256 = digest(bytes);
        ProjectFile {
            trusted: trust.trusted(source.path(), &sha256),
            source,
            sha256,
            config,
            warnings,
        }
    }
}

/// The hooks to run in `cwd`, and a line for each project file that does not run.
pub fn session_hooks(
    settings: &Settings,
    cwd: &Path,
) -> Result<(HookConfig, Vec<String>), Failure> {
    let (mut config, claude) = user_hooks(settings)?;
    let mut notices = Vec::new();
    // A project's file is not the user's to fix before they can work: one that does not read
    // runs nothing, and the start says why.
    let files = project_files(settings, cwd, claude).unwrap_or_else(|failure| {
        notices.push(format!(
            "the project's hooks do not run: {}",
            failure.message
        ));
        Vec::new()
    });
    for file in files {
        notices.extend(file.warnings.iter().cloned());
        if file.trusted {
            config.extend(file.config);
        } else if !file.config.is_empty() {
            notices.push(format!(
                "the hooks of {} do not run: they are not trusted (read them, then `dsh hooks trust`)",
                file.source.path().display()
            ));
        }
    }
    Ok((config, notices))
}

/// What a start says about the hooks of the current directory's project: each file that does
/// not run, and what of a Claude Code file dsh skips.
pub fn notices(settings: &Settings) -> Vec<String> {
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    match session_hooks(settings, &cwd) {
        Ok((_, notices)) => notices,
        Err(failure) => vec![failure.message],
    }
}

/// The hooks of the user's configuration file, and whether `.claude/settings.json` is read
/// (`[hooks] claude_settings`, default true).
pub fn user_hooks(settings: &Settings) -> Result<(HookConfig, bool), Failure> {
    let Some((path, true)) = &settings.config_file else {
        return Ok((HookConfig::default(), true));
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::config(format!("cannot read {} for its hooks: {e}", path.display()))
    })?;
    let file: toml::Value =
        toml::from_str(&text).map_err(|e| Failure::config(format!("{}: {e}", path.display())))?;
    let Some(mut hooks) = file.get("hooks").cloned() else {
        return Ok((HookConfig::default(), true));
    };
    let claude = match hooks
        .as_table_mut()
        .and_then(|t| t.remove("claude_settings"))
    {
        None => true,
        Some(toml::Value::Boolean(read)) => read,
        Some(_) => {
            return Err(Failure::config(format!(
                "{}: hooks.claude_settings must be true or false",
                path.display()
            )));
        }
    };
    let config = HookConfig::from_toml(&hooks, &Source::User(path.clone()))
        .map_err(|e| Failure::config(e.to_string()))?;
    Ok((config, claude))
}

/// The project's hook files seen from `cwd`: the nearest `.dsh/hooks.toml`, and the nearest
/// `.claude/settings.json` unless `claude` is false.
pub fn project_files(
    settings: &Settings,
    cwd: &Path,
    claude: bool,
) -> Result<Vec<ProjectFile>, Failure> {
    let trust = TrustFile::new(&settings.data_dir.value);
    let nearest = |relative: &str| -> Option<PathBuf> {
        cwd.ancestors()
            .map(|dir| dir.join(relative))
            .find(|p| p.is_file())
    };
    let mut files = Vec::new();
    if let Some(path) = nearest(".dsh/hooks.toml") {
        let bytes = read(&path)?;
        let table: toml::Value = toml::from_str(&String::from_utf8_lossy(&bytes))
            .map_err(|e| Failure::config(format!("{}: {e}", path.display())))?;
        let source = Source::Project(path);
        let config =
            HookConfig::from_toml(&table, &source).map_err(|e| Failure::config(e.to_string()))?;
        files.push(ProjectFile::read(
            &trust,
            source,
            &bytes,
            config,
            Vec::new(),
        ));
    }
    if claude && let Some(path) = nearest(".claude/settings.json") {
        let bytes = read(&path)?;
        let json: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Failure::config(format!("{}: {e}", path.display())))?;
        let source = Source::Claude(path);
        let (config, warnings) =
            HookConfig::from_claude(&json, &source).map_err(|e| Failure::config(e.to_string()))?;
        files.push(ProjectFile::read(&trust, source, &bytes, config, warnings));
    }
    Ok(files)
}

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| Failure::config(format!("cannot read {}: {e}", path.display())))
}
