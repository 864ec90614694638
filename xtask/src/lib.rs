//! Seam role: support — the repository gates of dsh: the crate graph (`deps`), crate-root
//! documentation (`crate-docs`) and the CI pipeline (`ci`), run as `cargo xtask <command>`.
//!
//! All logic lives in this library; `main.rs` is a thin front end. xtask links no workspace
//! crate, no async runtime and no YAML library: it reads the workspace through
//! `cargo metadata --no-deps`, so the gates run even when the rest of the workspace does not
//! compile.
//!
//! Invariants:
//! - gates only check; a diagnostic is one line `path[:line]: gate/rule: message`, sorted by
//!   path, line, rule and message, never by walk order;
//! - exit 0 means no violation, 1 at least one, 2 a usage, configuration or environment error
//!   (with `error: …` on stderr);
//! - with `--message-format json`, stdout carries one JSON object per line and nothing else.
//!
//! The normative description is the xtask spec of the design corpus; the documentation, RFC
//! and translation gates join this crate with their own issue.
#![deny(missing_docs)]

mod cargo;
mod ci;
mod crate_docs;
mod date;
mod deps;
mod diag;
mod error;
mod manifest;
mod repo;
mod roles;
mod source;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub use date::{Date, DateError};
pub use deps::edge_verdict;
pub use diag::{Diagnostic, Format, Gate, GateSummary, Printer, Report, Rule};
pub use error::XtaskError;
pub use repo::Repo;
pub use roles::Role;

/// What the process environment contributes to a run: `XTASK_TODAY` and `CARGO`.
#[derive(Clone, Debug, Default)]
pub struct RunEnv {
    /// The date taken as today; `None` means today in UTC+14.
    pub today: Option<Date>,
    /// The cargo binary; `None` means `cargo` on `PATH`.
    pub cargo: Option<OsString>,
}

#[derive(Parser, Debug)]
#[command(
    name = "xtask",
    about = "dsh repository gates: crate graph, crate docs and the CI pipeline",
    disable_version_flag = true
)]
struct Cli {
    /// Repository root (default: the parent of the xtask package).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "human")]
    message_format: FormatArg,
    /// Suppress summaries and notes (diagnostics are never suppressed).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FormatArg {
    Human,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The crate-graph and crate-docs gates.
    Deps,
    /// The full pipeline: fmt, clippy, test, deps.
    Ci {
        /// Stop after the first failed step.
        #[arg(long)]
        fail_fast: bool,
    },
}

/// Runs xtask with the process environment and stdio; the binary's whole `main`.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    let today = match std::env::var_os("XTASK_TODAY") {
        None => None,
        Some(value) => match Date::parse(&value.to_string_lossy()) {
            Ok(date) => Some(date),
            Err(e) => {
                let _ = writeln!(err, "error: XTASK_TODAY: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let env = RunEnv {
        today,
        cargo: std::env::var_os("CARGO"),
    };
    ExitCode::from(run_with(args, &env, &mut out, &mut err))
}

/// Runs xtask with an explicit environment and output streams; returns the exit code. Tests
/// call this so that parallel cases share no environment variables or stdio. Child processes
/// (the cargo steps of `ci`) still use the process's own stdio.
pub fn run_with(
    args: impl IntoIterator<Item = OsString>,
    env: &RunEnv,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            let text = e.render().to_string();
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = write!(out, "{text}");
                    0
                }
                _ => {
                    let _ = write!(err, "{text}");
                    // Some clap errors (a bad flag value) omit the usage; a usage error always
                    // shows it.
                    if !text.contains("Usage:") {
                        use clap::CommandFactory;
                        let _ = writeln!(err, "\n{}", Cli::command().render_usage());
                    }
                    2
                }
            };
        }
    };
    let mut printer = Printer {
        format: match cli.message_format {
            FormatArg::Human => Format::Human,
            FormatArg::Json => Format::Json,
        },
        quiet: cli.quiet,
        out,
        err,
    };
    let cargo = env.cargo.clone().unwrap_or_else(|| OsString::from("cargo"));
    let root = cli.root.unwrap_or_else(default_root);
    let repo = match Repo::open(&root, env.today.unwrap_or_else(Date::today)) {
        Ok(repo) => repo,
        Err(e) => return fail(&mut printer, &e),
    };
    match cli.command {
        Command::Deps => match deps_check(&repo, &cargo) {
            Ok(report) => {
                let _ = printer.report(&report);
                u8::from(!report.is_clean())
            }
            Err(e) => fail(&mut printer, &e),
        },
        Command::Ci { fail_fast } => ci::run(&repo, &cargo, fail_fast, &mut printer),
    }
}

fn fail(printer: &mut Printer, error: &XtaskError) -> u8 {
    let _ = writeln!(printer.err, "error: {error}");
    2
}

/// The parent of the xtask package directory, known at compile time.
fn default_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

/// The `deps` and `crate-docs` gates over the workspace at `repo`'s root, reading it with
/// `<cargo> metadata --no-deps`.
pub fn deps_check(repo: &Repo, cargo: &OsStr) -> Result<Report, XtaskError> {
    let metadata = cargo::Metadata::load(repo.root(), cargo)?;
    let mut sources = source::Sources::new(repo.root());
    let mut report = Report::default();
    let (diagnostics, checked) = deps::check(&metadata, &mut sources)?;
    report.add_gate(Gate::Deps, checked, diagnostics);
    let roles = roles::parse(&metadata.metadata)?;
    let (diagnostics, checked) = crate_docs::check(&metadata, &roles, &mut sources)?;
    report.add_gate(Gate::CrateDocs, checked, diagnostics);
    Ok(report)
}
