//! The speed budgets of the gates on a generated repository (200 RFCs, 40 documents, 10 pairs,
//! 300 sources) and on this repository: medians of 5 runs with a warm file cache, and peak
//! memory. Run with `cargo bench -p xtask --bench docs_check`; nothing here is asserted.
//!
//! `cargo xtask` is `cargo run`, so people run the dev profile: the figures that matter come
//! from the dev-profile binary this bench builds and runs as a process. The in-process figures
//! of the bench profile (optimised) follow for comparison. With `XTASK_BENCH_KEEP=<dir>` the
//! bench only writes the generated repository to `<dir>`, for profiling a single gate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::ffi::OsString;
use std::time::{Duration, Instant};

use xtask::bench::{CorpusSpec, synthetic_repo};
use xtask::{Date, RunEnv};

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time(root: &std::path::Path, args: &[&str], env: &RunEnv) -> Duration {
    let runs = (0..5)
        .map(|_| {
            let mut argv: Vec<OsString> = vec!["xtask".into(), "--root".into(), root.into()];
            argv.extend(args.iter().map(OsString::from));
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let started = Instant::now();
            let code = xtask::run_with(argv, env, &mut out, &mut err);
            let elapsed = started.elapsed();
            assert_eq!(code, 0, "{}", String::from_utf8_lossy(&err));
            elapsed
        })
        .collect();
    median(runs)
}

/// The dev-profile binary `cargo xtask` runs, built now.
fn dev_binary(repo: &std::path::Path) -> std::path::PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = std::process::Command::new(cargo)
        .args(["build", "--quiet", "-p", "xtask", "--bin", "xtask"])
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(built.success());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo.join("target"));
    target.join("debug").join("xtask")
}

fn time_process(binary: &std::path::Path, root: &std::path::Path, args: &[&str]) -> Duration {
    let runs = (0..5)
        .map(|_| {
            let started = Instant::now();
            let out = std::process::Command::new(binary)
                .arg("--root")
                .arg(root)
                .args(args)
                .env("XTASK_TODAY", "2026-12-15")
                .output()
                .unwrap();
            let elapsed = started.elapsed();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            elapsed
        })
        .collect();
    median(runs)
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_repo(dir.path(), &CorpusSpec::default()).unwrap();
    if let Some(keep) = std::env::var_os("XTASK_BENCH_KEEP") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(dir.path(), &keep).unwrap();
        return;
    }
    let env = RunEnv {
        today: Some(Date::parse("2026-12-15").unwrap()),
        cargo: std::env::var_os("CARGO"),
    };
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let binary = dev_binary(repo);
    println!("dev profile, the binary cargo xtask runs:");
    let docs = time_process(&binary, dir.path(), &["docs", "check"]);
    println!("  docs check (200 RFCs):   {docs:?}   (budget 1.0 s)");
    for gate in xtask::Gate::DOCS.map(xtask::Gate::id) {
        let alone = time_process(&binary, dir.path(), &["docs", "check", "--only", gate]);
        println!("    --only {gate:<12} {alone:?}");
    }
    let own = time_process(&binary, repo, &["docs", "check"]);
    println!("  docs check (this repo):  {own:?}");
    let index = time_process(&binary, dir.path(), &["rfc", "index", "--check"]);
    println!("  rfc index --check:       {index:?}   (budget 0.3 s)");
    let pairs = time_process(&binary, dir.path(), &["i18n", "check"]);
    println!("  i18n check (10 pairs):   {pairs:?}   (budget 0.2 s)");
    let deps = time_process(&binary, repo, &["deps"]);
    println!("  deps (dsh workspace):    {deps:?}   (budget 1.5 s)");

    println!("bench profile, in process:");
    let docs = time(dir.path(), &["docs", "check"], &env);
    println!("  docs check (200 RFCs):   {docs:?}");
    let own = time(repo, &["docs", "check"], &env);
    println!("  docs check (this repo):  {own:?}");
    if let Some(kib) = peak_rss_kib() {
        println!(
            "  peak resident memory:    {} MiB (budget 150 MiB)",
            kib / 1024
        );
    }
}
