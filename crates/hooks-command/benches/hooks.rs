//! What hooks cost an event, through the real local shell executor (unsandboxed):
//!
//! - with no hook for the event: the check every tool call makes;
//! - what a turn pays to read its session's hooks again (`HookSource::hooks`) in a
//!   directory ten levels deep with no project hook file, and with a trusted one;
//! - one trivial hook (`true`): the whole run, against `true` run alone through the same
//!   executor, p50 and p99 of each, and the difference — what dsh adds beyond the process.
//!
//! Run with `cargo bench -p dsh-hooks-command --bench hooks`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::time::{Duration, Instant};

use dsh_hooks::{Common, EventFields, HookEvent, HookInput, HookSource, Hooks, PermissionModeName};
use dsh_hooks_command::{CommandHooks, HookConfig, ProjectHooks, Source, TrustFile};
use dsh_kernel::CancellationToken;
use dsh_shell::{SandboxPolicy, ShellExecRequest, ShellExecutor};
use dsh_test_providers::providers::{LocalShellConfig, LocalShellExecutor};

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    samples[((samples.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let executor = LocalShellExecutor::new(LocalShellConfig::default()).unwrap();
        let table: toml::Value =
            toml::from_str("[[PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{ command = \"true\" }]")
                .unwrap();
        let config =
            HookConfig::from_toml(&table, &Source::User(dir.path().join("c.toml"))).unwrap();
        let hooks = CommandHooks::new(config, executor.clone(), SandboxPolicy::FullAccess);
        let none = CommandHooks::new(
            HookConfig::default(),
            executor.clone(),
            SandboxPolicy::FullAccess,
        );

        // The check a tool call makes when no hook wants it.
        let started = Instant::now();
        let mut wanted = 0;
        for _ in 0..1_000_000 {
            wanted += usize::from(none.wants(HookEvent::PreToolUse, &["Bash", "bash"]));
        }
        println!(
            "no hooks: {:?} per check ({wanted} wanted)",
            started.elapsed() / 1_000_000
        );

        // What each turn pays to read its hooks again.
        let deep = (0..10).fold(dir.path().to_path_buf(), |d, i| d.join(format!("d{i}")));
        std::fs::create_dir_all(&deep).unwrap();
        let data = tempfile::tempdir().unwrap();
        let source = ProjectHooks::new(
            HookConfig::default(),
            true,
            TrustFile::new(data.path()),
            executor.clone(),
            SandboxPolicy::FullAccess,
        );
        let read = |label: &str| {
            let mut samples: Vec<Duration> = (0..2_000)
                .map(|_| {
                    let started = Instant::now();
                    std::hint::black_box(source.hooks(&deep));
                    started.elapsed()
                })
                .collect();
            println!(
                "a turn's hooks read again, {label}: p50 {:?}, p99 {:?}",
                percentile(&mut samples, 0.5),
                percentile(&mut samples, 0.99)
            );
        };
        read("no project file");
        std::fs::create_dir_all(dir.path().join(".dsh")).unwrap();
        std::fs::write(
            dir.path().join(".dsh/hooks.toml"),
            "[[Stop]]\nhooks = [{ command = \"true\" }]\n",
        )
        .unwrap();
        for file in source.untrusted(&deep) {
            source.trust(&file).unwrap();
        }
        read("one trusted project file");

        let input = HookInput {
            common: Common {
                session_id: "bench".into(),
                transcript_path: None,
                cwd: dir.path().to_path_buf(),
                permission_mode: PermissionModeName::Default,
            },
            fields: EventFields::PreToolUse {
                tool: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
                call_id: "c".into(),
            },
        };
        let (mut hooked, mut bare) = (Vec::new(), Vec::new());
        for i in 0..400 {
            if i % 2 == 0 {
                let started = Instant::now();
                hooks.run(input.clone(), CancellationToken::new()).await;
                hooked.push(started.elapsed());
            } else {
                let request = ShellExecRequest::new("true").workdir(dir.path());
                let spec = executor.resolve(request).unwrap();
                let started = Instant::now();
                executor.run(spec).await.unwrap();
                bare.push(started.elapsed());
            }
        }
        let (hook50, hook99) = (percentile(&mut hooked, 0.5), percentile(&mut hooked, 0.99));
        let (bare50, bare99) = (percentile(&mut bare, 0.5), percentile(&mut bare, 0.99));
        println!("one `true` hook: p50 {hook50:?}, p99 {hook99:?}");
        println!("`true` alone through the executor: p50 {bare50:?}, p99 {bare99:?}");
        println!(
            "added by the hook machinery: p50 {:?}",
            hook50.saturating_sub(bare50)
        );
    });
}
