//! The command line: clap definitions and one handler per command. Handlers
//! return the exit code; every `XtaskError` becomes exit 2 with `error: …` on stderr.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

use crate::date::Date;
use crate::diag::{Format, Gate, Printer, Report};
use crate::docs::{self, DocsOptions};
use crate::error::XtaskError;
use crate::i18n::{self, manifest::Manifest};
use crate::repo::Repo;
use crate::rfc::index::Refresh;
use crate::rfc::{INDEX_PATH, RFC_ROOT, index, new, tree};
use crate::{RunEnv, budgets, ci};

#[derive(Parser, Debug)]
#[command(
    name = "xtask",
    about = "dsh repository gates: documentation, RFCs, translations, crate graph, CI",
    disable_version_flag = true
)]
pub struct Cli {
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
    /// Documentation gates.
    #[command(subcommand)]
    Docs(DocsCmd),
    /// RFC gates, index and scaffold.
    #[command(subcommand)]
    Rfc(RfcCmd),
    /// Bilingual pairs.
    #[command(subcommand)]
    I18n(I18nCmd),
    /// The crate-graph and crate-docs gates.
    Deps,
    /// The full pipeline: fmt, clippy, test, docs, deps.
    Ci {
        /// Stop after the first failed step.
        #[arg(long)]
        fail_fast: bool,
    },
}

#[derive(Subcommand, Debug)]
enum DocsCmd {
    /// Run the documentation gates.
    Check {
        /// Only these gates (comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "GATE")]
        only: Vec<String>,
        /// Regenerate a stale docs/rfc/INDEX.md (and nothing else).
        #[arg(long)]
        fix: bool,
    },
    /// The word-budget gate alone.
    Budgets {
        /// Print the budget table instead.
        #[arg(long)]
        list: bool,
    },
}

#[derive(Subcommand, Debug)]
enum RfcCmd {
    /// The rfc-tree, rfc-format and rfc-index gates.
    Check {
        /// Regenerate a stale index.
        #[arg(long)]
        fix: bool,
    },
    /// Write docs/rfc/INDEX.md.
    Index {
        /// Only verify it.
        #[arg(long)]
        check: bool,
    },
    /// Scaffold an RFC: <lifecycle>/<class>/<slug>.
    New {
        target: String,
        #[arg(long)]
        title: String,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, value_name = "YYYY-MM-DD")]
        date: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
enum I18nCmd {
    /// Check every pair, or only the named ones.
    Check { pairs: Vec<String> },
    /// Print every English document's pairing status.
    List,
    /// Confirm pairs by (re)writing their records.
    Record {
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        pairs: Vec<String>,
        /// Every pair whose two sides exist.
        #[arg(long)]
        all: bool,
    },
}

/// Parses `args` and runs the command.
pub fn main(args: impl IntoIterator<Item = OsString>, env: &RunEnv, printer: &mut Printer) -> u8 {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_error(&e, printer),
    };
    printer.format = match cli.message_format {
        FormatArg::Human => Format::Human,
        FormatArg::Json => Format::Json,
    };
    printer.quiet = cli.quiet;
    let root = cli.root.unwrap_or_else(default_root);
    let result = Repo::open(&root, env.today.unwrap_or_else(Date::today))
        .and_then(|repo| dispatch(cli.command, &repo, env, printer));
    match result {
        Ok(code) => code,
        Err(e) => {
            let _ = writeln!(printer.err, "error: {e}");
            2
        }
    }
}

fn clap_error(e: &clap::Error, printer: &mut Printer) -> u8 {
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = write!(printer.out, "{text}");
        return 0;
    }
    let _ = write!(printer.err, "{text}");
    // Some clap errors (a bad flag value) omit the usage; a usage error always shows it.
    if !text.contains("Usage:") {
        let _ = writeln!(printer.err, "\n{}", Cli::command().render_usage());
    }
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

fn verdict(printer: &mut Printer, report: &Report) -> u8 {
    let _ = printer.report(report);
    u8::from(!report.is_clean())
}

fn dispatch(
    command: Command,
    repo: &Repo,
    env: &RunEnv,
    printer: &mut Printer,
) -> Result<u8, XtaskError> {
    let cargo = env.cargo.clone().unwrap_or_else(|| OsString::from("cargo"));
    match command {
        Command::Deps => Ok(verdict(printer, &crate::deps_check(repo, &cargo)?)),
        Command::Ci { fail_fast } => Ok(ci::run(repo, &cargo, fail_fast, printer)),
        Command::Docs(DocsCmd::Check { only, fix }) => {
            let only = if only.is_empty() {
                None
            } else {
                Some(parse_gates(&only)?)
            };
            docs_check(repo, &DocsOptions { only, fix }, printer)
        }
        Command::Docs(DocsCmd::Budgets { list: false }) => {
            let (diags, checked) = budgets::check(repo)?;
            let mut report = Report::default();
            report.add_gate(Gate::DocBudgets, checked, diags);
            Ok(verdict(printer, &report))
        }
        Command::Docs(DocsCmd::Budgets { list: true }) => budget_list(repo, printer),
        Command::Rfc(RfcCmd::Check { fix }) => {
            let only = Some(vec![Gate::RfcTree, Gate::RfcFormat, Gate::RfcIndex]);
            docs_check(repo, &DocsOptions { only, fix }, printer)
        }
        Command::Rfc(RfcCmd::Index { check }) => regenerate(repo, check, printer),
        Command::Rfc(RfcCmd::New {
            target,
            title,
            reason,
            date,
        }) => {
            let request = new::Request {
                target: &target,
                title: &title,
                reason: reason.as_deref(),
                date: date.as_deref(),
            };
            rfc_new(
                repo,
                &request,
                env.today.unwrap_or_else(Date::utc_today),
                printer,
            )
        }
        Command::I18n(I18nCmd::Check { pairs }) => i18n_check(repo, &pairs, printer),
        Command::I18n(I18nCmd::List) => crate::i18n_list::run(repo, printer),
        Command::I18n(I18nCmd::Record { pairs, all }) => i18n_record(repo, &pairs, all, printer),
    }
}

fn parse_gates(names: &[String]) -> Result<Vec<Gate>, XtaskError> {
    names
        .iter()
        .map(|n| {
            Gate::parse_docs(n).ok_or_else(|| {
                let all: Vec<&str> = Gate::DOCS.iter().map(|g| g.id()).collect();
                XtaskError::Usage(format!(
                    "--only: unknown gate {n:?}; gates are {}\n\n{}",
                    all.join(", "),
                    <Cli as clap::CommandFactory>::command().render_usage()
                ))
            })
        })
        .collect()
}

fn docs_check(repo: &Repo, opts: &DocsOptions, printer: &mut Printer) -> Result<u8, XtaskError> {
    let outcome = docs::run(repo, opts)?;
    if let Some(count) = outcome.wrote_index {
        wrote_index(printer, count);
    }
    Ok(verdict(printer, &outcome.report))
}

fn wrote_index(printer: &mut Printer, count: usize) {
    if printer.format == Format::Json {
        let _ = printer.json(json!({"type": "written", "path": INDEX_PATH}));
    } else {
        let _ = printer.note(&format!("rfc-index: wrote {INDEX_PATH} ({count} RFCs)"));
    }
}

/// Renders and writes the index when the tree is clean; returns the tree's report otherwise.
fn regenerate(repo: &Repo, check_only: bool, printer: &mut Printer) -> Result<u8, XtaskError> {
    let tree = tree::check(repo)?;
    match index::refresh(repo, &tree, !check_only)? {
        Refresh::NoTree => {
            let _ = printer.note(&format!(
                "rfc-index: there is no {RFC_ROOT}/, so there is nothing to index"
            ));
            Ok(0)
        }
        Refresh::TreeNotClean => {
            let mut report = Report::default();
            let mut diagnostics = tree.unreadable_findings();
            diagnostics.extend(tree.diagnostics);
            report.add_gate(Gate::RfcTree, tree.checked, diagnostics);
            let _ = printer.note(&format!(
                "rfc-index: {INDEX_PATH} left unchanged until the RFC tree is clean"
            ));
            Ok(verdict(printer, &report).max(1))
        }
        Refresh::UpToDate(count) => {
            let _ = printer.note(&format!("rfc-index: up to date ({count} RFCs)"));
            Ok(0)
        }
        Refresh::Stale(stale) => {
            let mut report = Report::default();
            report.add_gate(Gate::RfcIndex, 1, vec![stale]);
            Ok(verdict(printer, &report))
        }
        Refresh::Written(count) => {
            wrote_index(printer, count);
            Ok(0)
        }
    }
}

fn rfc_new(
    repo: &Repo,
    request: &new::Request,
    default_date: Date,
    printer: &mut Printer,
) -> Result<u8, XtaskError> {
    let (path, text) = new::scaffold(repo, request, default_date)?;
    crate::write::atomic(repo.root(), &path, text.as_bytes())?;
    if printer.format == Format::Json {
        let _ = printer.json(json!({"type": "created", "path": path}));
    } else {
        let _ = writeln!(printer.out, "{path}");
    }
    // Regenerate the index from a fresh walk that sees the new file.
    let fresh = Repo::open(repo.root(), repo.today())?;
    let tree = tree::check(&fresh)?;
    match index::refresh(&fresh, &tree, true)? {
        Refresh::Written(count) => wrote_index(printer, count),
        Refresh::TreeNotClean => {
            let _ = printer.note(&format!(
                "note: {INDEX_PATH} left unchanged: the RFC tree has violations; run cargo xtask rfc check"
            ));
        }
        Refresh::NoTree | Refresh::UpToDate(_) | Refresh::Stale(_) => {}
    }
    Ok(0)
}

/// Resolves PAIR arguments to English paths; an argument naming no pair is a usage error.
fn resolve_pairs(
    repo: &Repo,
    manifest: &Manifest,
    args: &[String],
) -> Result<BTreeSet<String>, XtaskError> {
    let anchors = i18n::anchors(repo);
    let mut out = BTreeSet::new();
    for arg in args {
        let english = i18n::resolve(arg);
        let known = anchors.contains(&english)
            || manifest.is_required(&english)
            || repo.is_scanned_file(&english);
        if !known {
            return Err(XtaskError::Usage(format!("{arg}: no such pair")));
        }
        out.insert(english);
    }
    Ok(out)
}

fn i18n_check(repo: &Repo, pairs: &[String], printer: &mut Printer) -> Result<u8, XtaskError> {
    let manifest = Manifest::load(repo)?;
    let only = if pairs.is_empty() {
        None
    } else {
        Some(resolve_pairs(repo, &manifest, pairs)?)
    };
    let (diags, checked) = i18n::check(repo, &manifest, only.as_ref())?;
    let mut report = Report::default();
    report.add_gate(Gate::I18n, checked, diags);
    Ok(verdict(printer, &report))
}

fn i18n_record(
    repo: &Repo,
    pairs: &[String],
    all: bool,
    printer: &mut Printer,
) -> Result<u8, XtaskError> {
    let manifest = Manifest::load(repo)?;
    let targets = if all {
        i18n::all_pairs(repo, &manifest)
    } else {
        let targets = resolve_pairs(repo, &manifest, pairs)?;
        for english in &targets {
            let twin = i18n::record::twin_of(english);
            if manifest.is_excluded(english) {
                return Err(XtaskError::Usage(format!(
                    "{english} is excluded from pairing"
                )));
            }
            for side in [english.as_str(), twin.as_str()] {
                if !repo.is_scanned_file(side) {
                    return Err(XtaskError::Usage(format!(
                        "{side} does not exist; a record confirms two existing sides"
                    )));
                }
            }
        }
        targets
    };
    for (path, changed) in i18n::write_records(repo, &targets)? {
        match (printer.format, changed) {
            (Format::Json, true) => {
                let _ = printer.json(json!({"type": "written", "path": path}));
            }
            (Format::Json, false) => {}
            (Format::Human, true) => {
                let _ = printer.note(&format!("recorded {path}"));
            }
            (Format::Human, false) => {
                let _ = printer.note(&format!("unchanged {path}"));
            }
        }
    }
    Ok(0)
}

fn budget_list(repo: &Repo, printer: &mut Printer) -> Result<u8, XtaskError> {
    for e in budgets::entries(repo)? {
        let words = e.words.unwrap_or(0);
        if printer.format == Format::Json {
            let _ = printer.json(json!({
                "type": "budget",
                "path": e.path,
                "status": e.status(),
                "words": words,
                "ceiling": e.raw,
            }));
        } else {
            let _ = writeln!(
                printer.out,
                "{}  {}  {}  {}",
                e.status(),
                words,
                e.raw,
                e.path
            );
        }
    }
    Ok(0)
}
