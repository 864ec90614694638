//! The text each setting's flag was given on the command line, `None` when it was not: one
//! reader a flag, named in the settings table beside the setting it sets.

use std::path::Path;

use super::CommandFlags;
use crate::args::{Global, Reasoning};
use crate::exit::Failure;

type Given = Result<Option<String>, Failure>;

pub fn model(global: &Global, _: CommandFlags) -> Given {
    Ok(global.model.clone())
}

pub fn base_url(global: &Global, _: CommandFlags) -> Given {
    Ok(global.base_url.clone())
}

pub fn reasoning(global: &Global, _: CommandFlags) -> Given {
    Ok(global.reasoning.map(|r| level(r).to_owned()))
}

pub fn max_tokens(global: &Global, _: CommandFlags) -> Given {
    Ok(global.max_tokens.map(|n| n.to_string()))
}

pub fn temperature(global: &Global, _: CommandFlags) -> Given {
    Ok(global.temperature.map(|t| t.to_string()))
}

pub fn max_steps(_: &Global, flags: CommandFlags) -> Given {
    Ok(flags.max_steps.map(|n| n.to_string()))
}

pub fn context_window(global: &Global, _: CommandFlags) -> Given {
    Ok(global.context_window.map(|n| n.to_string()))
}

pub fn replay(global: &Global, _: CommandFlags) -> Given {
    Ok(global.replay.clone())
}

pub fn system_prompt_file(global: &Global, _: CommandFlags) -> Given {
    utf8("--system-prompt-file", global.system_prompt_file.as_deref())
}

pub fn data_dir(global: &Global, _: CommandFlags) -> Given {
    utf8("--data-dir", global.data_dir.as_deref())
}

pub fn project_instructions(global: &Global, _: CommandFlags) -> Given {
    Ok(global.no_project_instructions.then(|| "false".to_owned()))
}

/// `dsh run --permission` (two commands spell the flag alike, each for its own setting).
pub fn run_permission(_: &Global, flags: CommandFlags) -> Given {
    Ok(flags.run_permission.map(|mode| mode.as_str().to_owned()))
}

/// `dsh acp --permission`.
pub fn acp_permission(_: &Global, flags: CommandFlags) -> Given {
    Ok(flags.acp_permission.map(|mode| mode.as_str().to_owned()))
}

/// `--sandbox`.
pub fn sandbox(global: &Global, _: CommandFlags) -> Given {
    Ok(global.sandbox.clone())
}

/// `dsh --permission`, the interactive terminal's.
pub fn tui_permission(_: &Global, flags: CommandFlags) -> Given {
    Ok(flags.tui_permission.map(|mode| mode.as_str().to_owned()))
}

/// A path flag's text; a path that is not UTF-8 cannot be a setting's text.
fn utf8(flag: &str, path: Option<&Path>) -> Given {
    match path {
        None => Ok(None),
        Some(path) => path
            .to_str()
            .map(|p| Some(p.to_owned()))
            .ok_or_else(|| Failure::config(format!("{flag} {}: not UTF-8", path.display()))),
    }
}

/// A reasoning level's word, as the settings table spells it.
pub fn level(reasoning: Reasoning) -> &'static str {
    match reasoning {
        Reasoning::Default => "default",
        Reasoning::Off => "off",
        Reasoning::Low => "low",
        Reasoning::Medium => "medium",
        Reasoning::High => "high",
        Reasoning::Max => "max",
    }
}
