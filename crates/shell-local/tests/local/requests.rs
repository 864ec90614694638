//! Resolving requests, checking specs, and validating the configuration.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use dsh_shell::{ShellError, ShellExecRequest, ShellExecSpec, ShellExecutor};
use dsh_shell_local::{LocalConfigError, LocalShellConfig, LocalShellExecutor};

use crate::support::*;

#[tokio::test]
async fn resolve_applies_the_provider_defaults_and_caps_and_copies_the_owner() {
    let dir = tempfile::tempdir().unwrap();
    let exec = executor_with(|c| {
        c.default_workdir = Some(dir.path().to_path_buf());
        c.default_timeout = Duration::from_secs(7);
        c.max_timeout = Duration::from_secs(9);
        c.output_cap = 100;
        c.max_output_cap = 1000;
    });
    let spec = exec.resolve(ShellExecRequest::new("true")).unwrap();
    assert_eq!(spec.workdir, dir.path());
    assert_eq!(spec.timeout, Some(Duration::from_secs(7)));
    assert_eq!(spec.output_cap, 100);
    assert_eq!(spec.owner, None);
    let spec = exec
        .resolve(ShellExecRequest::new("true").background(true))
        .unwrap();
    assert_eq!(
        spec.timeout, None,
        "a background task has no deadline unless asked"
    );
    let spec = exec
        .resolve(
            ShellExecRequest::new("true")
                .workdir("sub/../other")
                .timeout(Duration::from_secs(60))
                .output_cap(5000)
                .owner(""),
        )
        .unwrap();
    assert_eq!(spec.workdir, dir.path().join("other"));
    assert_eq!(spec.timeout, Some(Duration::from_secs(9)));
    assert_eq!(spec.output_cap, 1000);
    assert_eq!(spec.owner.as_deref(), Some(""));
    let spec = exec
        .resolve(
            ShellExecRequest::new("true")
                .background(true)
                .timeout(Duration::from_secs(60)),
        )
        .unwrap();
    assert_eq!(spec.timeout, Some(Duration::from_secs(9)));
    exec.dispose().await;
}

#[tokio::test]
async fn resolve_refuses_bad_fields_by_name_and_records_nothing() {
    let exec = executor();
    let cases: Vec<(ShellExecRequest, &str)> = vec![
        (ShellExecRequest::new(""), "command"),
        (ShellExecRequest::new("a\0b"), "command"),
        (ShellExecRequest::new("x".repeat(131_072)), "command"),
        (ShellExecRequest::new("true").workdir("a\0b"), "workdir"),
        (
            ShellExecRequest::new("true").timeout(Duration::ZERO),
            "timeout",
        ),
        (ShellExecRequest::new("true").output_cap(0), "output_cap"),
        (ShellExecRequest::new("true").env("", "v"), "env"),
        (ShellExecRequest::new("true").env("A=B", "v"), "env"),
        (ShellExecRequest::new("true").env("A\0", "v"), "env"),
        (ShellExecRequest::new("true").env("A", "v\0"), "env"),
    ];
    for (request, field) in cases {
        match exec.resolve(request) {
            Err(ShellError::InvalidRequest { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected InvalidRequest({field}), got {other:?}"),
        }
    }
    assert!(exec.list().is_empty());
    exec.dispose().await;
}

#[tokio::test]
async fn a_spec_in_the_wrong_mode_or_breaking_an_invariant_spawns_nothing() {
    let exec = executor();
    let fg_spec = exec.resolve(ShellExecRequest::new("true")).unwrap();
    let bg_spec = exec
        .resolve(ShellExecRequest::new("true").background(true))
        .unwrap();
    assert!(matches!(
        exec.start(fg_spec.clone()).await,
        Err(ShellError::ModeMismatch { background: false })
    ));
    assert!(matches!(
        exec.run(bg_spec).await,
        Err(ShellError::ModeMismatch { background: true })
    ));
    let mut relative = fg_spec.clone();
    relative.workdir = PathBuf::from("rel");
    let mut zero_cap = fg_spec.clone();
    zero_cap.output_cap = 0;
    let mut no_deadline = fg_spec;
    no_deadline.timeout = None;
    for spec in [relative, zero_cap, no_deadline] {
        assert!(matches!(
            exec.run(spec).await,
            Err(ShellError::InvalidRequest { .. })
        ));
    }
    assert!(exec.list().is_empty());
    exec.dispose().await;
}

#[tokio::test]
async fn a_hand_built_spec_is_used_exactly_as_given() {
    let exec = executor();
    let spec = ShellExecSpec::new(
        "printf 0123456789abcdef".into(),
        std::env::temp_dir(),
        Some(Duration::from_secs(10)),
        10,
        false,
        None,
        None,
        BTreeMap::new(),
        dsh_shell::SandboxPolicy::FullAccess,
    );
    let out = exec.run(spec).await.unwrap();
    assert_eq!(&out.tail[..], b"6789abcdef");
    assert_eq!(out.tail_start, 6);
    assert!(out.exit.output.truncated);
    exec.dispose().await;
}

#[tokio::test]
async fn every_broken_configuration_field_is_named_and_nothing_is_built() {
    let file = tempfile::NamedTempFile::new().unwrap();
    type Edit = Box<dyn Fn(&mut LocalShellConfig)>;
    let cases: Vec<(&str, Edit)> = vec![
        ("max_timeout", Box::new(|c| c.max_timeout = Duration::ZERO)),
        (
            "default_timeout",
            Box::new(|c| c.default_timeout = Duration::ZERO),
        ),
        (
            "default_timeout",
            Box::new(|c| c.default_timeout = c.max_timeout * 2),
        ),
        ("max_output_cap", Box::new(|c| c.max_output_cap = 0)),
        ("output_cap", Box::new(|c| c.output_cap = 0)),
        (
            "output_cap",
            Box::new(|c| c.output_cap = c.max_output_cap + 1),
        ),
        (
            "spill_cap",
            Box::new(|c| c.spill_cap = c.output_cap as u64 - 1),
        ),
        ("term_grace", Box::new(|c| c.term_grace = Duration::ZERO)),
        (
            "term_grace",
            Box::new(|c| c.term_grace = Duration::from_secs(61)),
        ),
        ("drain_grace", Box::new(|c| c.drain_grace = Duration::ZERO)),
        (
            "drain_grace",
            Box::new(|c| c.drain_grace = Duration::from_secs(11)),
        ),
        ("max_running_tasks", Box::new(|c| c.max_running_tasks = 0)),
        ("max_finished_tasks", Box::new(|c| c.max_finished_tasks = 0)),
        ("max_read", Box::new(|c| c.max_read = 3)),
        (
            "default_workdir",
            Box::new(|c| c.default_workdir = Some("relative".into())),
        ),
        (
            "default_workdir",
            Box::new(|c| c.default_workdir = Some("/no/such/dir".into())),
        ),
        (
            "spill_root",
            Box::new(move |c| c.spill_root = Some("/no/such/root".into())),
        ),
    ];
    for (field, edit) in cases {
        let mut config = LocalShellConfig::default();
        edit(&mut config);
        match LocalShellExecutor::new(config) {
            Err(LocalConfigError::Invalid { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected Invalid({field}), got {other:?}"),
        }
    }
    for shell in ["no-such-shell-anywhere", "/no/such/bash", ""] {
        let config = LocalShellConfig {
            shell: shell.into(),
            ..LocalShellConfig::default()
        };
        assert!(matches!(
            LocalShellExecutor::new(config),
            Err(LocalConfigError::ShellNotFound { .. })
        ));
    }
    let config = LocalShellConfig {
        shell: file.path().to_path_buf(),
        ..LocalShellConfig::default()
    };
    assert!(
        matches!(
            LocalShellExecutor::new(config),
            Err(LocalConfigError::ShellNotFound { .. })
        ),
        "a file without execute permission is not a shell"
    );
}

#[test]
fn building_outside_a_runtime_is_refused() {
    assert!(matches!(
        LocalShellExecutor::new(LocalShellConfig::default()),
        Err(LocalConfigError::NoRuntime)
    ));
}
