//! `dsh` without a command: the interactive terminal (`dsh-tui`) on the runtime this root
//! composes.
//!
//! Like `dsh run`, everything that can be refused (no terminal, settings, model, key, the
//! session named) is checked before the terminal is taken, and every path after composition
//! ends in `Runtime::shutdown`.

use std::io::IsTerminal;
use std::path::Path;

use dsh_tools::safe_text::SafeText;
use dsh_tui::{Launch, Open, Status};

use crate::args::{Global, InteractiveArgs};
use crate::exit::Failure;
use crate::run::{Target, find};
use crate::settings::{CommandFlags, Settings};

/// The exit status without a terminal to talk on: a usage error.
const NO_TERMINAL: u8 = 2;

/// Runs the interactive terminal; returns the exit status.
pub async fn interactive(global: &Global, args: &InteractiveArgs) -> u8 {
    if !std::io::stdin().is_terminal() || !crate::output::is_terminal() {
        eprintln!(
            "error: dsh without a command is an interactive session and needs a terminal on \
             stdin and stdout; from a script or a pipe, use `dsh run \"<prompt>\"` (see dsh run --help)"
        );
        return NO_TERMINAL;
    }
    match session(global, args).await {
        Ok(status) => status,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

async fn session(global: &Global, args: &InteractiveArgs) -> Result<u8, Failure> {
    let flags = CommandFlags {
        max_steps: args.max_steps,
        tui_permission: args.permission,
        ..CommandFlags::default()
    };
    let settings = Settings::resolve(global, flags)?;
    let target = match (&args.resume, args.continue_here) {
        (Some(id), _) if !id.is_empty() => Target::Named(id.clone()),
        (_, true) => Target::Newest,
        (Some(_) | None, false) => Target::New,
    };
    let settings = crate::remember::settings_for(settings, global, flags, &target).await?;
    let chosen = crate::model::choose(&settings)?;
    let store = crate::store::Store::prepared(&settings)?;
    let runtime = crate::compose::compose(&settings, &store, Some(chosen.plugin)).await?;
    // Before the screen is taken: the question about the project's untrusted hooks.
    crate::hooks::ask_trust(&runtime).await;
    let ran = open(&runtime, &settings, &store, target, args, &chosen.label).await;
    runtime.shutdown().await;
    let finished = ran?;
    if let Some(id) = finished.session {
        eprintln!("dsh · session {id} · dsh -c continues it");
    }
    Ok(finished.status)
}

async fn open(
    runtime: &dsh_kernel::Runtime,
    settings: &Settings,
    store: &crate::store::Store,
    target: Target,
    args: &InteractiveArgs,
    label: &str,
) -> Result<dsh_tui::Finished, Failure> {
    let persistence = runtime
        .scope()
        .require::<dyn dsh_session::SessionPersistence>()
        .map_err(|e| Failure::internal(format!("no session storage: {e}")))?;
    let open = match (&target, &args.resume) {
        (Target::New, Some(_)) => Open::Pick,
        (Target::New, None) => Open::New,
        (Target::Named(_) | Target::Newest, _) => {
            match find(&*persistence, &target, store).await? {
                Some(id) => Open::Resume(id.to_string()),
                None => Open::New,
            }
        }
    };
    let root = std::env::current_dir()
        .map_err(|e| Failure::internal(format!("cannot read the working directory: {e}")))?;
    let color = std::env::var("NO_COLOR").map_or(true, |v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let model = match &settings.replay {
        Some(_) => label.to_owned(),
        None => settings.model.value.clone(),
    };
    let status = Status {
        dir: shortened(&root),
        branch: branch(&root),
        model: SafeText::plain(&model),
        reasoning: settings
            .reasoning
            .value
            .map(|r| format!("{r:?}").to_lowercase()),
        mode: settings.tui_permission.value.as_str().to_owned(),
        context: None,
        cost: None,
    };
    let notices = crate::compose::start_notices(runtime, settings)
        .into_iter()
        .map(|notice| format!("warning: {notice}"))
        .collect();
    let launch = Launch {
        scope: runtime.scope().clone(),
        mode: settings.tui_permission.value,
        open,
        explicit: crate::run::explicit(settings),
        server: settings
            .replay
            .is_none()
            .then(|| settings.base_url.value.clone()),
        status,
        color,
        history: settings.data_dir.value.join("prompt-history.jsonl"),
        root,
        user_commands: settings.user_commands(),
        prices: settings.prices.clone(),
        window: Some(settings.context_window.value.get()),
        auth_hint: Some(crate::model::auth_hint(settings)),
        notices,
    };
    dsh_tui::run(launch)
        .await
        .map_err(|e| Failure::internal(e.to_string()))
}

/// `dir` with the home directory as `~`.
fn shortened(dir: &Path) -> String {
    let shown = match std::env::var_os("HOME").map(std::path::PathBuf::from) {
        Some(home) if dir.starts_with(&home) => match dir.strip_prefix(&home) {
            Ok(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => dir.display().to_string(),
        },
        _ => dir.display().to_string(),
    };
    SafeText::plain(&shown)
}

/// The git branch of the repository `dir` is in, read from `.git/HEAD` (no git process).
fn branch(dir: &Path) -> Option<String> {
    let git = dir
        .ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())?;
    let head = match git.is_file() {
        // A worktree: `.git` names the real directory.
        true => {
            let text = std::fs::read_to_string(&git).ok()?;
            let real = text.strip_prefix("gitdir:")?.trim();
            std::fs::read_to_string(Path::new(real).join("HEAD")).ok()?
        }
        false => std::fs::read_to_string(git.join("HEAD")).ok()?,
    };
    let name = head.trim().strip_prefix("ref: refs/heads/")?;
    Some(SafeText::plain(name))
}
