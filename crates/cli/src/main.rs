//! Seam role: root — the `dsh` binary: reads the settings, picks one provider per seam, loads
//! the plugins in order and runs a front end (`dsh run`).
//!
//! The only crate besides the test suites that names providers (architecture invariant 4), and
//! the only one whose human output may go to stdout (invariant 6). It exits by shutting the
//! runtime down, so every session log is closed on every exit path except SIGKILL.
//!
//! Status: `dsh` alone (the interactive terminal, `dsh-tui`), `dsh run` (offline with `--replay`, or against an OpenAI-compatible server),
//! `dsh acp` (the Agent Client Protocol on stdio, for editors), `dsh sessions`, `dsh config`
//! and `dsh models` work, with configuration files.

use std::io::IsTerminal;

mod acp;
mod args;
mod ask;
mod change;
mod compose;
mod config;
mod digest;
mod excerpt;
mod exit;
mod hooks;
mod hooks_cmd;
mod interactive;
mod json_lines;
mod lookup;
mod model;
mod models;
mod output;
mod permissions;
mod prompt;
mod remember;
mod remembered;
mod render;
mod run;
mod sessions;
mod settings;
mod signals;
mod status;
mod store;
mod transfer;
mod window;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

fn main() -> ExitCode {
    // Started by the shell executor as its watchdog: that is all this process does.
    if let Some(code) = dsh_shell_local::watchdog::run_if_requested() {
        return code;
    }
    // Started as a sandboxed command's helper: it confines itself and becomes the command.
    if let Some(code) = dsh_shell_local::sandbox::run_if_requested() {
        return code;
    }
    // clap answers --help and --version before any other work.
    let cli = Cli::parse();
    if let (Some(_), Some(flag)) = (&cli.command, cli.interactive.given()) {
        eprintln!(
            "error: {flag} before a command is the interactive session's; give it after the \
             command (dsh run {flag} …)"
        );
        return ExitCode::from(2);
    }
    init_logs(
        cli.global.verbose,
        matches!(cli.command, Some(Command::Acp { .. })),
        cli.command.is_none(),
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let status = runtime.block_on(async {
        match &cli.command {
            None => interactive::interactive(&cli.global, &cli.interactive).await,
            Some(Command::Run(args)) => run::run(&cli.global, args).await,
            Some(Command::Acp {
                permission,
                max_steps,
            }) => acp::acp(&cli.global, *permission, *max_steps).await,
            Some(Command::Config { json }) => config::config(&cli.global, *json),
            Some(Command::Models { json }) => models::models(&cli.global, *json).await,
            Some(Command::Sessions { command }) => sessions::sessions(&cli.global, command).await,
            Some(Command::Permissions { command, all, json }) => {
                permissions::permissions(&cli.global, command.as_ref(), *all, *json)
            }
            Some(Command::Hooks { command }) => hooks_cmd::hooks(&cli.global, command.as_ref()),
        }
    });
    // Tool processes were ended by the shutdown; nothing left should hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    ExitCode::from(status)
}

/// Logs go to stderr: `DSH_LOG` when set, else `warn` raised by each `-v`. The interactive
/// terminal owns stderr's screen: it logs only when asked to (`DSH_LOG`, `-v`).
fn init_logs(verbose: u8, acp: bool, interactive: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("DSH_LOG") {
        Ok(spec) if !spec.is_empty() => EnvFilter::new(spec),
        _ => EnvFilter::new(match verbose {
            // An editor shows an agent's stderr as its log: say what happens.
            0 if acp => "info",
            0 if interactive => "off",
            0 => "warn",
            1 => "debug",
            _ => "trace",
        }),
    };
    // Escape codes only where a person reads them: not in a captured log file.
    let ansi = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .try_init();
}
