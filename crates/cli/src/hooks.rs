//! The user's hooks: `[hooks]` of their own configuration file, read into the hooks
//! provider's configuration. A project's own hook files (`.dsh/hooks.toml`,
//! `.claude/settings.json`) are not read yet: they run only once trusted, and trust is not
//! built.

use crate::exit::Failure;
use dsh_hooks_command::{HookConfig, Source};

use crate::settings::Settings;

/// The hooks of the user's configuration file (none when it has no `[hooks]`).
pub fn user_hooks(settings: &Settings) -> Result<HookConfig, Failure> {
    let Some((path, true)) = &settings.config_file else {
        return Ok(HookConfig::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::config(format!("cannot read {} for its hooks: {e}", path.display()))
    })?;
    let file: toml::Value =
        toml::from_str(&text).map_err(|e| Failure::config(format!("{}: {e}", path.display())))?;
    match file.get("hooks") {
        None => Ok(HookConfig::default()),
        Some(hooks) => HookConfig::from_toml(hooks, &Source::User(path.clone()))
            .map_err(|e| Failure::config(e.to_string())),
    }
}
