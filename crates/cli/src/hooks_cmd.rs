//! `dsh hooks`: every hook this directory's sessions would run, with its source and, for a
//! project's file, whether it is trusted; `dsh hooks trust` trusts the project's files as they
//! are now, after showing what they run.

use dsh_hooks_command::{HookConfig, Source, TrustFile};
use dsh_tools::safe_text::SafeText;

use crate::args::{Global, HooksCommand};
use crate::exit::Failure;
use crate::settings::{CommandFlags, Settings};

/// Runs `dsh hooks …`; returns the exit status.
pub fn hooks(global: &Global, command: Option<&HooksCommand>) -> u8 {
    crate::exit::status(run(global, command))
}

fn run(global: &Global, command: Option<&HooksCommand>) -> Result<(), Failure> {
    let settings = Settings::resolve(global, CommandFlags::default())?;
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::internal(format!("the current directory is unknown: {e}")))?;
    let (user, claude) = crate::hooks::user_hooks(&settings)?;
    let files = crate::hooks::project_files(&settings, &cwd, claude)?;
    let mut out = String::new();
    match command {
        None => {
            if let Some((path, true)) = &settings.config_file {
                out.push_str(&format!("yours · {}\n", path.display()));
                out.push_str(&listed(&user));
            }
            for file in &files {
                let state = match file.trusted {
                    true => "trusted",
                    false => "not trusted: it does not run (dsh hooks trust)",
                };
                out.push_str(&format!(
                    "{} · {} · {state}\n",
                    kind(&file.source),
                    file.source.path().display()
                ));
                out.push_str(&listed(&file.config));
            }
            if user.is_empty() && files.iter().all(|f| f.config.is_empty()) {
                out.push_str("no hooks: see \"Hooks\" in the README to add some\n");
            }
        }
        Some(HooksCommand::Trust) => {
            let trust = TrustFile::new(&settings.data_dir.value);
            let untrusted: Vec<_> = files.iter().filter(|f| !f.trusted).collect();
            if untrusted.is_empty() {
                out.push_str(
                    "nothing to trust: this project's hook files are trusted as they are\n",
                );
            }
            for file in untrusted {
                trust
                    .trust(file.source.path(), &file.sha256)
                    .map_err(|e| Failure::internal(format!("cannot record the trust: {e}")))?;
                out.push_str(&format!(
                    "trusted {} as it is now; it runs:\n",
                    file.source.path().display()
                ));
                out.push_str(&listed(&file.config));
            }
        }
    }
    let _ = crate::output::write(out.as_bytes());
    Ok(())
}

fn kind(source: &Source) -> &'static str {
    match source {
        Source::User(_) => "yours",
        Source::Project(_) => "project",
        Source::Claude(_) => "project (Claude Code)",
    }
}

/// One line a handler: `  PreToolUse Bash  guard.sh  (deny on error, 5 s)`.
fn listed(config: &HookConfig) -> String {
    let mut out = String::new();
    for (event, group, handler) in config.handlers() {
        let matcher = match group.pattern.as_str() {
            "" | "*" => String::new(),
            pattern => format!(" {}", SafeText::plain(pattern)),
        };
        let on_error = match handler.on_error {
            dsh_hooks::OnError::Deny => "deny on error",
            dsh_hooks::OnError::Allow => "allow on error",
        };
        out.push_str(&format!(
            "  {event}{matcher}  {}  ({on_error}, {} s{})\n",
            SafeText::plain(&handler.command),
            handler.timeout.as_secs_f64(),
            if handler.sandbox { "" } else { ", unsandboxed" }
        ));
    }
    out
}
