//! The README's worked examples, in both languages: they configure what they say, and the
//! guard, run through the real local shell executor, blocks a force push and lets the rest
//! through.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use dsh_hooks::{Common, EventFields, HookEvent, HookInput, HookSource, Hooks, PermissionModeName};
use dsh_hooks_command::{CommandHooks, HookConfig, ProjectHooks, Source, TrustFile};
use dsh_kernel::CancellationToken;
use dsh_shell::SandboxPolicy;
use dsh_test_providers::providers::{LocalShellConfig, LocalShellExecutor};
use serde_json::json;

/// The first TOML block of the README's hooks section, read as the user's configuration.
fn examples(readme: &str, heading: &str) -> HookConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(readme);
    let text = std::fs::read_to_string(&path).unwrap();
    let section = &text[text.find(heading).unwrap()..];
    let start = section.find("```toml\n").unwrap() + "```toml\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let table: toml::Value = toml::from_str(block).unwrap();
    let config = HookConfig::from_toml(&table["hooks"], &Source::User(PathBuf::from(readme)));
    config.unwrap()
}

#[tokio::test]
async fn the_readme_s_examples_configure_each_common_use_and_the_guard_guards() {
    for (readme, heading) in [("README.md", "## Hooks\n"), ("README.zh.md", "## 钩子\n")] {
        let config = examples(readme, heading);
        let events: Vec<HookEvent> = config.events.keys().copied().collect();
        assert_eq!(
            events,
            [
                HookEvent::SessionStart,
                HookEvent::PreToolUse,
                HookEvent::PostToolUse,
                HookEvent::Stop,
                HookEvent::Notification,
            ],
            "{readme}"
        );
        if which("jq").is_none() {
            eprintln!("jq is not installed: the README's guard is not run");
            continue;
        }
        let project = tempfile::tempdir().unwrap();
        let executor = LocalShellExecutor::new(LocalShellConfig::default()).unwrap();
        let guard = HookConfig {
            events: config
                .events
                .into_iter()
                .filter(|(event, _)| *event == HookEvent::PreToolUse)
                .collect(),
        };
        let hooks = CommandHooks::new(guard, executor, SandboxPolicy::FullAccess);
        let call = |command: &str| HookInput {
            common: Common {
                session_id: "s1".into(),
                transcript_path: None,
                cwd: project.path().to_path_buf(),
                permission_mode: PermissionModeName::Default,
            },
            fields: EventFields::PreToolUse {
                tool: "bash".into(),
                arguments: json!({"command": command}),
                call_id: "call_1".into(),
            },
        };
        let pushed = hooks
            .run(
                call("git push --force origin main"),
                CancellationToken::new(),
            )
            .await;
        assert_eq!(pushed.block.as_deref(), Some("no force push"), "{readme}");
        let listed = hooks
            .run(call("git status"), CancellationToken::new())
            .await;
        assert_eq!(listed.block, None, "{readme}: {listed:?}");
    }
}

#[tokio::test]
async fn a_project_file_runs_only_in_the_content_trusted_and_trust_checks_the_content_again() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".dsh")).unwrap();
    let file = project.path().join(".dsh/hooks.toml");
    std::fs::write(&file, "[[Stop]]\nhooks = [{ command = \"make check\" }]\n").unwrap();
    let executor = LocalShellExecutor::new(LocalShellConfig::default()).unwrap();
    let source = ProjectHooks::new(
        HookConfig::default(),
        true,
        TrustFile::new(data.path()),
        executor,
        SandboxPolicy::FullAccess,
    );
    let untrusted = source.untrusted(project.path());
    assert_eq!(untrusted.len(), 1);
    assert_eq!(untrusted[0].runs, ["Stop: make check"]);
    assert!(
        !source
            .hooks(project.path())
            .hooks
            .wants(HookEvent::Stop, &[])
    );
    // Shown, then changed before the answer: what was shown is not what would run.
    std::fs::write(&file, "[[Stop]]\nhooks = [{ command = \"rm -rf ~\" }]\n").unwrap();
    assert!(source.trust(&untrusted[0]).is_err());
    assert!(
        !source
            .hooks(project.path())
            .hooks
            .wants(HookEvent::Stop, &[])
    );
    // Trusted as shown: it runs, from a subdirectory too, and only these hooks are its own.
    let shown = source.untrusted(project.path());
    source.trust(&shown[0]).unwrap();
    let set = source.hooks(&project.path().join(".dsh"));
    assert!(set.hooks.wants(HookEvent::Stop, &[]));
    assert_eq!(set.trusted, shown);
    assert!(source.untrusted(project.path()).is_empty());
    assert!(
        source
            .of_files(project.path(), &shown)
            .wants(HookEvent::Stop, &[])
    );
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}
