//! The speed budgets of the gates on a generated repository (200 RFCs, 40 documents, 10 pairs,
//! 300 sources): medians of 5 in-process runs with a warm file cache, and peak memory.
//! Run with `cargo bench -p xtask --bench docs_check`; nothing here is asserted.
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

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    synthetic_repo(dir.path(), &CorpusSpec::default()).unwrap();
    let env = RunEnv {
        today: Some(Date::parse("2026-12-15").unwrap()),
        cargo: std::env::var_os("CARGO"),
    };
    let docs = time(dir.path(), &["docs", "check"], &env);
    let index = time(dir.path(), &["rfc", "index", "--check"], &env);
    let pairs = time(dir.path(), &["i18n", "check"], &env);
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let deps = time(repo, &["deps"], &env);
    println!("docs check (200 RFCs):   {docs:?}   (budget 1.0 s)");
    println!("rfc index --check:       {index:?}   (budget 0.3 s)");
    println!("i18n check (10 pairs):   {pairs:?}   (budget 0.2 s)");
    println!("deps (dsh workspace):    {deps:?}   (budget 1.5 s)");
    if let Some(kib) = peak_rss_kib() {
        println!(
            "peak resident memory:    {} MiB (budget 150 MiB)",
            kib / 1024
        );
    }
}
