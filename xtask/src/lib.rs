//! Seam role: support — the repository gates of dsh: documentation, RFCs and translations
//! (`docs`, `rfc`, `i18n`), the crate graph (`deps`, `crate-docs`) and the CI pipeline (`ci`),
//! run as `cargo xtask <command>`.
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
//! What the gates enforce is described in `docs/architecture.md` (the xtask section and the
//! architecture invariants) and, for RFCs, in `docs/rfc/README.md`.
#![deny(missing_docs)]

#[doc(hidden)]
pub mod bench;
mod budgets;
mod cargo;
mod ci;
mod cli;
mod crate_docs;
mod date;
mod deps;
mod diag;
mod docs;
mod error;
mod files;
mod i18n;
mod i18n_list;
mod links;
mod manifest;
mod md;
mod path_crates;
mod refs;
mod repo;
mod restricted;
mod rfc;
mod roles;
mod toml_lines;
mod unused;
mod views;
mod wrap;
mod write;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::process::ExitCode;

pub use date::{Date, DateError};
pub use deps::edge_verdict;
pub use diag::{Diagnostic, Format, Gate, GateSummary, Printer, Report, Rule};
pub use docs::DocsOptions;
pub use error::XtaskError;
pub use md::Slugger;
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

/// Runs xtask with the process environment and stdio; the binary's whole `main`.
pub fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    // xtask is a developer tool whose report is its stdout; it is no part of dsh, so the
    // rule that only dsh's output module opens stdout does not bind it. Every gate writes
    // through the `io::Write` handed on from here.
    #[allow(clippy::disallowed_methods)]
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
    let mut printer = Printer {
        format: Format::Human,
        quiet: false,
        out,
        err,
    };
    cli::main(args, env, &mut printer)
}

/// The documentation gates over an opened repository.
pub fn docs_check(repo: &Repo, opts: &DocsOptions) -> Result<Report, XtaskError> {
    Ok(docs::run(repo, opts)?.report)
}

/// The `deps` and `crate-docs` gates over the workspace at `repo`'s root, reading it with
/// `<cargo> metadata --no-deps`.
pub fn deps_check(repo: &Repo, cargo: &OsStr) -> Result<Report, XtaskError> {
    let metadata = cargo::Metadata::load(repo.root(), cargo)?;
    let mut report = Report::default();
    let (diagnostics, checked) = deps::check(&metadata, repo)?;
    report.add_gate(Gate::Deps, checked, diagnostics);
    let roles = roles::parse(&metadata.metadata)?;
    let (diagnostics, checked) = crate_docs::check(&metadata, &roles, repo)?;
    report.add_gate(Gate::CrateDocs, checked, diagnostics);
    Ok(report)
}
