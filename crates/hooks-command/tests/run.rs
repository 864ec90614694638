//! Real hook scripts in a temp project, run through the real local shell executor: what
//! they read on stdin, and what their exits and answers decide.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use dsh_hooks::{
    Common, EventFields, HookEvent, HookInput, Hooks, PermissionDecision, PermissionModeName,
};
use dsh_hooks_command::{CommandHooks, HookConfig, Source};
use dsh_kernel::CancellationToken;
use dsh_shell::SandboxPolicy;
use dsh_test_providers::providers::{LocalShellConfig, LocalShellExecutor};
use serde_json::json;

fn hooks(project: &Path, toml_text: &str) -> CommandHooks {
    let table: toml::Value = toml::from_str(toml_text).unwrap();
    let source = Source::Project(project.join(".dsh/hooks.toml"));
    let config = HookConfig::from_toml(&table, &source).unwrap();
    let executor = LocalShellExecutor::new(LocalShellConfig::default()).unwrap();
    CommandHooks::new(config, executor, SandboxPolicy::FullAccess)
}

fn bash_call(project: &Path, command: &str) -> HookInput {
    HookInput {
        common: Common {
            session_id: "s1".into(),
            transcript_path: None,
            cwd: project.to_path_buf(),
            permission_mode: PermissionModeName::Default,
        },
        fields: EventFields::PreToolUse {
            tool: "bash".into(),
            arguments: json!({"command": command}),
            call_id: "call_1".into(),
        },
    }
}

/// A guard that refuses `rm -rf`, as people write them: read stdin, exit 2 with a reason.
const GUARD: &str = r#"input=$(cat); case "$input" in *'rm -rf'*) echo "rm -rf is not allowed here" >&2; exit 2;; esac; exit 0"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_blocks_with_its_reason_and_lets_the_rest_through() {
    let project = tempfile::tempdir().unwrap();
    let text =
        format!("[[PreToolUse]]\nmatcher = \"Bash\"\nhooks = [{{ command = '''{GUARD}''' }}]");
    let hooks = hooks(project.path(), &text);
    assert!(hooks.wants(HookEvent::PreToolUse, &["Bash", "bash"]));
    assert!(!hooks.wants(HookEvent::PreToolUse, &["Read", "read"]));
    assert!(!hooks.wants(HookEvent::Stop, &[]));
    let cancel = CancellationToken::new();
    let blocked = hooks
        .run(bash_call(project.path(), "rm -rf /"), cancel.clone())
        .await;
    assert_eq!(blocked.block.as_deref(), Some("rm -rf is not allowed here"));
    let fine = hooks.run(bash_call(project.path(), "ls"), cancel).await;
    assert_eq!(fine.block, None);
    assert!(fine.messages.is_empty(), "{fine:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_reads_the_event_as_claude_code_writes_it() {
    let project = tempfile::tempdir().unwrap();
    let seen = project.path().join("seen.json");
    let text = format!(
        "[[PreToolUse]]\nhooks = [{{ command = 'cat > {}; echo \"$CLAUDE_PROJECT_DIR\" > {}.dir' }}]",
        seen.display(),
        seen.display()
    );
    let hooks = hooks(project.path(), &text);
    hooks
        .run(bash_call(project.path(), "ls"), CancellationToken::new())
        .await;
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "ls");
    assert_eq!(input["permission_mode"], "default");
    let dir = std::fs::read_to_string(format!("{}.dir", seen.display())).unwrap();
    assert_eq!(dir.trim(), project.path().display().to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_or_slow_guard_blocks_only_when_it_fails_closed() {
    let project = tempfile::tempdir().unwrap();
    // From a project's file a guard fails closed by default; the second says allow.
    let text = r#"
        [[PreToolUse]]
        hooks = [
            { command = "echo boom >&2; exit 1" },
            { command = "sleep 30", timeout_ms = 200, on_error = "allow" },
        ]
    "#;
    let hooks = hooks(project.path(), text);
    let verdict = hooks
        .run(bash_call(project.path(), "ls"), CancellationToken::new())
        .await;
    let block = verdict.block.unwrap();
    assert!(block.contains("exited 1: boom"), "{block}");
    assert!(!block.contains("timed out"), "the slow one allows: {block}");
    assert!(
        verdict.messages.iter().any(|m| m.contains("timed out")),
        "{:?}",
        verdict.messages
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_rewrite_the_input_and_decide_the_permission() {
    let project = tempfile::tempdir().unwrap();
    let text = r#"
        [[PreToolUse]]
        hooks = [
            { command = '''echo '{"hookSpecificOutput":{"permissionDecision":"ask","updatedInput":{"command":"ls -la"}}}' ''' },
            { command = '''echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}' ''' },
        ]
    "#;
    let hooks = hooks(project.path(), text);
    let verdict = hooks
        .run(bash_call(project.path(), "ls"), CancellationToken::new())
        .await;
    assert_eq!(
        verdict.permission.map(|(d, _)| d),
        Some(PermissionDecision::Ask)
    );
    assert_eq!(verdict.updated_input, Some(json!({"command": "ls -la"})));
    assert_eq!(verdict.block, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_turn_ends_its_hooks() {
    let project = tempfile::tempdir().unwrap();
    let text = "[[PreToolUse]]\nhooks = [{ command = \"sleep 30\", timeout_ms = 60000, on_error = \"allow\" }]";
    let hooks = Arc::new(hooks(project.path(), text));
    let cancel = CancellationToken::new();
    let running = {
        let (hooks, cancel, input) = (
            hooks.clone(),
            cancel.clone(),
            bash_call(project.path(), "ls"),
        );
        tokio::spawn(async move { hooks.run(input, cancel).await })
    };
    cancel.cancel();
    let verdict = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("the run ends with its turn")
        .unwrap();
    assert!(
        verdict.messages.iter().any(|m| m.contains("cancelled")),
        "{verdict:?}"
    );
}
