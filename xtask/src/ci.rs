//! `cargo xtask ci`: the whole pipeline, with every check living in xtask so
//! that local runs, hooks and CI cannot drift.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::json;

use crate::diag::{Format, Printer};
use crate::error::XtaskError;
use crate::repo::Repo;

/// One step of the pipeline.
enum Step {
    /// A cargo command run from the root.
    Cargo(&'static str, &'static [&'static str]),
    /// The documentation gates, in process (no `--fix`).
    Docs,
    /// The crate-graph and crate-docs gates, in process.
    Deps,
}

impl Step {
    fn name(&self) -> &'static str {
        match self {
            Step::Cargo(name, _) => name,
            Step::Docs => "docs",
            Step::Deps => "deps",
        }
    }
}

/// The steps, in order.
const STEPS: &[Step] = &[
    Step::Cargo("fmt", &["fmt", "--all", "--", "--check"]),
    Step::Cargo(
        "clippy",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ],
    ),
    Step::Cargo("test", &["test", "--workspace", "--locked"]),
    Step::Docs,
    Step::Deps,
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Failed,
    /// Could not start, or hit a configuration error: the run exits 2.
    Broken,
    Skipped,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed | Status::Broken => "FAILED",
            Status::Skipped => "skipped",
        }
    }
}

/// Runs the pipeline and returns the exit code: 2 if a step could not start or hit a
/// configuration error, else 1 if any step failed, else 0.
pub fn run(repo: &Repo, cargo: &OsStr, fail_fast: bool, printer: &mut Printer) -> u8 {
    let mut results: Vec<(&'static str, Status, f64)> = Vec::new();
    let mut stop = false;
    for step in STEPS {
        if stop {
            results.push((step.name(), Status::Skipped, 0.0));
            continue;
        }
        let started = Instant::now();
        let status = match step {
            Step::Cargo(_, args) => run_cargo(repo, cargo, args, printer),
            Step::Docs => gate_step(
                printer,
                crate::docs_check(repo, &crate::DocsOptions::default()),
            ),
            Step::Deps => gate_step(printer, crate::deps_check(repo, cargo)),
        };
        results.push((step.name(), status, started.elapsed().as_secs_f64()));
        stop = fail_fast && status != Status::Ok;
    }

    let failed = results
        .iter()
        .filter(|(_, s, _)| matches!(s, Status::Failed | Status::Broken))
        .count();
    for (name, status, seconds) in &results {
        let _ = writeln!(printer.err, "ci: {name} {} ({seconds:.1} s)", status.word());
        if printer.format == Format::Json {
            let _ = printer.json(json!({
                "type": "step",
                "step": name,
                "status": status.word().to_lowercase(),
                "seconds": seconds,
            }));
        }
    }
    let _ = writeln!(
        printer.err,
        "ci: {failed} of {} steps failed",
        results.len()
    );
    if results.iter().any(|(_, s, _)| *s == Status::Broken) {
        2
    } else if failed > 0 {
        1
    } else {
        0
    }
}

/// Prints an in-process gate's verdict and turns it into a step status.
fn gate_step(printer: &mut Printer, result: Result<crate::Report, XtaskError>) -> Status {
    match result {
        Ok(report) => {
            let _ = printer.report(&report);
            if report.is_clean() {
                Status::Ok
            } else {
                Status::Failed
            }
        }
        Err(err) => {
            let _ = writeln!(printer.err, "error: {err}");
            Status::Broken
        }
    }
}

/// Variables `cargo run` sets for the program it runs (`cargo xtask` is `cargo run -p xtask`),
/// which must not reach the builds xtask starts: build scripts that watch them (ring's watches
/// `CARGO_MANIFEST_DIR`) would see another value than in any other build — the end-to-end
/// suites' own build of the binary, say — and make cargo compile their crates, and everything
/// above them, over again.
fn leaked_by_cargo_run(name: &str) -> bool {
    [
        "CARGO_MANIFEST_",
        "CARGO_PKG_",
        "CARGO_BIN_",
        "CARGO_CRATE_",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
        || name == "CARGO_PRIMARY_PACKAGE"
        || name == "CARGO_TARGET_TMPDIR"
}

fn run_cargo(repo: &Repo, cargo: &OsStr, args: &[&str], printer: &mut Printer) -> Status {
    let mut command = Command::new(cargo);
    command
        .args(args)
        .current_dir(repo.root())
        .stdin(Stdio::null());
    for (name, _) in std::env::vars_os() {
        if leaked_by_cargo_run(&name.to_string_lossy()) {
            command.env_remove(name);
        }
    }
    if printer.format == Format::Json {
        // stdout carries only JSON objects; the child's stdout goes to our stderr.
        command.stdout(Stdio::from(std::io::stderr()));
    }
    let _ = printer.err.flush();
    match command.status() {
        Ok(status) if status.success() => Status::Ok,
        Ok(_) => Status::Failed,
        Err(err) => {
            let err = XtaskError::Cargo {
                status: None,
                stderr: format!("cannot start {}: {err}", cargo.to_string_lossy()),
            };
            let _ = writeln!(printer.err, "error: {err}");
            Status::Broken
        }
    }
}
