//! The context service against real directories, real files and real git.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use dsh_agent::record::{InstructionsRecord, SourceKind};
use dsh_agent::{Audience, CallerPrompt, ContextBuilder, ContextRequest, PromptMode, ToolBrief};
use dsh_agent_context::{ContextConfig, LocalContext, Today};
use dsh_test_support::tree::{git, write};

mod snapshot;

fn config() -> ContextConfig {
    ContextConfig {
        today: Today::Fixed("2026-12-04".into()),
        ..ContextConfig::default()
    }
}

async fn build(config: ContextConfig, cwd: &Path) -> InstructionsRecord {
    build_with(config, ContextRequest::new(cwd)).await
}

async fn build_with(config: ContextConfig, request: ContextRequest) -> InstructionsRecord {
    LocalContext::new(config).build(request).await.unwrap()
}

fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in:\n{text}"))
}

#[tokio::test]
async fn nested_agents_files_come_outermost_first_after_the_user_s_own() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let deep = repo.join("crates/app");
    std::fs::create_dir_all(&deep).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]);
    write(repo.join("AGENTS.md"), "ROOT RULE\n");
    write(repo.join("crates/CLAUDE.md"), "CLAUDE FALLBACK\n");
    write(deep.join("AGENTS.md"), "DEEP RULE\n");
    write(dir.path().join("AGENTS.md"), "ABOVE THE REPOSITORY\n");
    let user = dir.path().join("config/dsh/AGENTS.md");
    write(&user, "USER RULE\n");
    let record = build(
        ContextConfig {
            user_instructions: Some(user.clone()),
            ..config()
        },
        &deep,
    )
    .await;
    let text = &record.text;
    let order = [
        "You are dsh, a coding agent.",
        "# Environment",
        "USER RULE",
        "ROOT RULE",
        "CLAUDE FALLBACK",
        "DEEP RULE",
    ];
    let at: Vec<usize> = order.iter().map(|n| position(text, n)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        !text.contains("ABOVE THE REPOSITORY"),
        "only from the git root down"
    );
    assert!(text.contains(&format!(
        "## {}\n\nROOT RULE",
        repo.join("AGENTS.md").display()
    )));
    assert!(text.contains(&format!("- Working directory: {}", deep.display())));
    assert!(text.contains(&format!(
        "- Git: repository at {}, branch trunk, ",
        repo.display()
    )));
    let kinds: Vec<_> = record
        .sources
        .iter()
        .map(|s| (s.kind, s.path.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            (SourceKind::Builtin, "builtin".to_owned()),
            (SourceKind::User, user.display().to_string()),
            (
                SourceKind::Project,
                repo.join("AGENTS.md").display().to_string()
            ),
            (
                SourceKind::Project,
                repo.join("crates/CLAUDE.md").display().to_string()
            ),
            (
                SourceKind::Project,
                deep.join("AGENTS.md").display().to_string()
            ),
        ]
    );
    assert!(record.warnings.is_empty(), "{:?}", record.warnings);
}

#[tokio::test]
async fn without_git_the_cwd_alone_is_searched_and_the_block_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path().join("AGENTS.md"), "HERE\n");
    let record = build(config(), dir.path()).await;
    assert!(record.text.contains("- Git: not a git repository"));
    assert!(record.text.contains("HERE"));
    assert!(record.environment.unwrap().git.is_none());
}

#[tokio::test]
async fn the_git_line_says_whether_the_tree_is_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    write(repo.join("a.txt"), "a");
    git(repo, &["add", "."]);
    git(repo, &["commit", "-qm", "one"]);
    let clean = build(config(), repo).await;
    assert!(clean.text.contains("branch main, clean"), "{}", clean.text);
    write(repo.join("a.txt"), "changed");
    let dirty = build(config(), repo).await;
    assert!(dirty.text.contains("branch main, with uncommitted changes"));
    assert!(
        clean.still_current(&dirty),
        "dirtiness alone keeps the recorded text"
    );
}

#[tokio::test]
async fn instruction_files_share_thirty_two_kib_and_a_cut_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a");
    git(dir.path(), &["init", "-q"]);
    let line = "keep this rule in mind at all times\n";
    write(dir.path().join("AGENTS.md"), line.repeat(600)); // 21,600 bytes
    write(deep.join("AGENTS.md"), line.repeat(600));
    write(deep.join("b/AGENTS.md"), "NEVER SENT\n");
    let record = build(config(), &deep.join("b")).await;
    let text = &record.text;
    assert!(text.contains(
        "[dsh: the rest of this file was cut here: instruction files are limited to 32 KiB in all]"
    ));
    assert!(!text.contains("NEVER SENT"));
    assert!(text.contains("was not sent: instruction files are limited to 32 KiB in all"));
    let sent: usize = text.matches(line.trim_end()).count() * line.len();
    assert!(sent <= 32 * 1024 && sent > 30 * 1024, "{sent}");
    let project: Vec<_> = record
        .sources
        .iter()
        .filter(|s| s.kind == SourceKind::Project)
        .collect();
    assert!(!project[0].truncated && project[1].truncated);
    assert!(
        project[2]
            .skipped
            .as_deref()
            .is_some_and(|s| s.contains("limit"))
    );
    assert_eq!(record.warnings.len(), 2, "{:?}", record.warnings);
    assert!(record.warnings[0].contains("was cut to its first"));
}

#[tokio::test]
async fn a_file_that_is_not_utf8_is_skipped_with_a_warning_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path().join("AGENTS.md"), b"\xff\xfe ZZRULES \x80");
    let record = build(config(), dir.path()).await;
    let path = dir.path().join("AGENTS.md").display().to_string();
    assert_eq!(
        record.warnings,
        [format!("{path} was skipped: it is not UTF-8 text")]
    );
    assert!(!record.text.contains("ZZRULES"));
    assert_eq!(record.sources[1].skipped.as_deref(), Some("not UTF-8"));
}

#[tokio::test]
async fn a_directory_named_agents_md_is_not_an_instruction_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("AGENTS.md")).unwrap();
    write(dir.path().join("CLAUDE.md"), "FALLBACK\n");
    let record = build(config(), dir.path()).await;
    assert!(record.warnings.is_empty(), "{:?}", record.warnings);
    assert!(record.text.contains("FALLBACK"));
}

#[tokio::test]
async fn a_prompt_file_replaces_the_builtin_text_and_discovery_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path().join("AGENTS.md"), "PROJECT RULE\n");
    let prompt = dir.path().join("prompt.md");
    write(&prompt, "You are a terse reviewer.\n");
    let record = build(
        ContextConfig {
            system_prompt_file: Some(prompt.clone()),
            project_instructions: false,
            ..config()
        },
        dir.path(),
    )
    .await;
    assert!(
        record
            .text
            .starts_with("You are a terse reviewer.\n\n# Environment")
    );
    assert!(!record.text.contains("You are dsh") && !record.text.contains("PROJECT RULE"));
    assert_eq!(record.sources[0].kind, SourceKind::PromptFile);
    assert_eq!(record.sources.len(), 1);

    let missing = LocalContext::new(ContextConfig {
        system_prompt_file: Some(dir.path().join("gone.md")),
        ..config()
    })
    .build(ContextRequest::new(dir.path()))
    .await
    .unwrap_err();
    assert!(missing.message.contains("gone.md"), "{missing}");
}

#[tokio::test]
async fn a_caller_prompt_is_appended_last_or_replaces_the_builtin_text() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path().join("AGENTS.md"), "PROJECT RULE\n");
    let mut request = ContextRequest::new(dir.path());
    request.caller = Some(CallerPrompt::append("FROM THE EDITOR"));
    let appended = build_with(config(), request.clone()).await;
    assert!(
        appended
            .text
            .ends_with("# Additional instructions\n\nFROM THE EDITOR\n")
    );
    assert!(position(&appended.text, "PROJECT RULE") < position(&appended.text, "FROM THE EDITOR"));
    request.caller = Some(CallerPrompt {
        mode: PromptMode::Replace,
        text: "ONLY THIS".into(),
    });
    let replaced = build_with(config(), request).await;
    assert!(replaced.text.starts_with("ONLY THIS\n\n# Environment"));
    assert!(replaced.text.contains("PROJECT RULE") && !replaced.text.contains("You are dsh"));
}

#[tokio::test]
async fn an_unchanged_disk_builds_the_same_text_and_an_edit_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path().join("AGENTS.md"), "one\n");
    let mut request = ContextRequest::new(dir.path());
    request.audience = Audience::Editor;
    request.tools = vec![ToolBrief {
        name: "bash".into(),
        guidance: None,
    }];
    let first = build_with(config(), request.clone()).await;
    let again = build_with(config(), request.clone()).await;
    assert_eq!(first, again);
    write(dir.path().join("AGENTS.md"), "two\n");
    let edited = build_with(config(), request).await;
    assert!(!first.still_current(&edited));
}
