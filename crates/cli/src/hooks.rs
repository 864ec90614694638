//! The hooks a session runs: `[hooks]` of the user's own configuration file, then the
//! project's `.dsh/hooks.toml` and `.claude/settings.json` (the nearest of each from the
//! session's directory up) when the user trusted their exact content (the provider,
//! `dsh_hooks_command`, reads them again at each session start and turn); the terminal's
//! question that trusts them, and what a start says of those that do not run.

use std::io::IsTerminal;
use std::path::Path;

use dsh_hooks::HookSource;
use dsh_hooks_command::{HookConfig, ReadFile, Source, TrustFile};
use dsh_kernel::Runtime;
use dsh_tools::safe_text::SafeText;

use crate::exit::Failure;
use crate::settings::Settings;

/// What a start says about the hooks of the current directory's project: each file that does
/// not run (it does not read, or is not trusted), and what of a Claude Code file dsh skips.
pub fn notices(settings: &Settings) -> Vec<String> {
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let claude = match user_hooks(settings) {
        Ok((_, claude)) => claude,
        Err(failure) => return vec![failure.message],
    };
    // A project's file is not the user's to fix before they can work: one that does not read
    // runs nothing, and the start says why.
    let files = match project_files(settings, &cwd, claude) {
        Ok(files) => files,
        Err(failure) => {
            return vec![format!(
                "the project's hooks do not run: {}",
                failure.message
            )];
        }
    };
    let mut notices = Vec::new();
    for file in files {
        notices.extend(file.warnings.iter().cloned());
        if !file.trusted && !file.config.is_empty() {
            notices.push(format!(
                "the hooks of {} do not run: they are not trusted (read them, then `dsh hooks trust`)",
                file.source.path().display()
            ));
        }
    }
    notices
}

/// The terminal's question at a session's start: each project hook file seen from the
/// current directory that would run something but is not trusted is shown with what it runs,
/// and trusted as it is now if the person says yes. Asked only when a person is there (stdin
/// and stderr are terminals); otherwise such files do not run, and the start says so.
pub async fn ask_trust(runtime: &Runtime) {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return;
    }
    let (Some(source), Ok(cwd)) = (
        runtime.scope().get::<dyn HookSource>(),
        std::env::current_dir(),
    ) else {
        return;
    };
    for file in source.untrusted(&cwd) {
        let mut question = format!(
            "dsh · the hooks of {} are not trusted; they would run:\n",
            SafeText::plain(&file.path.display().to_string())
        );
        for line in &file.runs {
            question.push_str(&format!("    {}\n", SafeText::plain(line)));
        }
        question.push_str("  trust this file as it is now and run its hooks? [y/N] ");
        match crate::ask::ask(&question).await {
            Ok(true) => match source.trust(&file) {
                Ok(()) => {}
                Err(e) => eprintln!("warning: {e}"),
            },
            Ok(false) => {}
            Err(e) => tracing::debug!("no terminal to ask about hooks: {e}"),
        }
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
) -> Result<Vec<ReadFile>, Failure> {
    let trust = TrustFile::new(&settings.data_dir.value);
    dsh_hooks_command::project::files(cwd, claude, &trust)
        .map_err(|e| Failure::config(e.to_string()))
}
