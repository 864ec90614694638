//! How commands are spawned: argv, session, stdio, environment, working directory, outcomes.

use std::os::unix::fs::PermissionsExt;

use dsh_shell::{EndCause, ShellError, ShellExecRequest, ShellExecutor};

use crate::support::*;

#[tokio::test]
async fn a_missing_command_is_an_outcome_with_code_127_not_an_error() {
    let exec = executor();
    let out = fg(&exec, "nosuchcmd_marker_xyz").await;
    assert_eq!(out.exit.code, Some(127));
    assert_eq!(out.exit.end, EndCause::Exited);
    assert!(text(&out.tail).contains("not found"));
    assert!(exec.list().is_empty());
    exec.dispose().await;
}

#[tokio::test]
async fn an_unusable_workdir_is_bad_cwd_and_nothing_is_listed() {
    let exec = executor();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let mut dirs = vec![dir.path().join("missing"), file];
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Modes do not bind root, so the mode-000 case only means something for other users.
    if !rustix::process::geteuid().is_root() {
        dirs.push(locked.clone());
    }
    for workdir in dirs {
        let spec = exec
            .resolve(ShellExecRequest::new("true").workdir(&workdir))
            .unwrap();
        assert!(
            matches!(exec.run(spec).await, Err(ShellError::BadCwd { .. })),
            "{workdir:?}"
        );
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(exec.list().is_empty());
    exec.dispose().await;
}

#[tokio::test]
async fn the_shell_is_non_login_non_interactive_and_leads_its_own_group() {
    let exec = executor();
    // This process's session as `ps` sees it: in a container it can be 0 (the leader is
    // outside the PID namespace), which no getsid wrapper returns as a valid id.
    let script = format!(
        r#"echo "$0 $-"; shopt -q login_shell && echo login; ps -o pgid=,sid= -p $$; echo $$; ps -o sid= -p {}"#,
        std::process::id()
    );
    let out = fg(&exec, &script).await;
    let text = text(&out.tail);
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    let (shell, flags) = first.split_once(' ').unwrap();
    assert!(std::path::Path::new(shell).is_absolute(), "{first}");
    assert!(!flags.contains('i'), "{first}");
    let ids = lines.next().unwrap();
    assert_ne!(ids, "login");
    let pid = lines.next().unwrap().trim();
    let own_session = lines.next().unwrap().trim();
    let ids: Vec<&str> = ids.split_whitespace().collect();
    assert_eq!(ids[0], pid, "the leader's group is its own");
    // A new session only when this process has a terminal to keep the command away from;
    // otherwise the spawn stays on the posix_spawn path, in this process's session.
    let has_terminal = std::fs::File::open("/dev/tty").is_ok();
    let expected = if has_terminal { pid } else { own_session };
    assert_eq!(
        ids[1], expected,
        "the session (a terminal here: {has_terminal})"
    );
    exec.dispose().await;
}

#[tokio::test]
async fn a_command_has_no_controlling_terminal() {
    let exec = executor();
    let out = fg(&exec, "head -c1 /dev/tty; echo rc=$?").await;
    let text = text(&out.tail);
    assert!(text.contains("No such device or address"), "{text}");
    assert!(text.contains("rc=1"), "{text}");
    exec.dispose().await;
}

#[tokio::test]
async fn stdout_and_stderr_are_one_stream_in_write_order() {
    let exec = executor();
    let out = fg(&exec, "echo out; echo err >&2; echo out2").await;
    assert_eq!(text(&out.tail), "out\nerr\nout2\n");
    exec.dispose().await;
}

#[tokio::test]
async fn stdin_is_empty_unless_given_and_unread_stdin_is_not_an_error() {
    let exec = executor();
    let out = fg(&exec, "cat; echo done").await;
    assert_eq!(text(&out.tail), "done\n");
    let spec = exec
        .resolve(ShellExecRequest::new("cat").stdin(&b"hi"[..]))
        .unwrap();
    assert_eq!(&exec.run(spec).await.unwrap().tail[..], b"hi");
    let spec = exec
        .resolve(ShellExecRequest::new("exit 7").stdin(vec![b'x'; 1 << 20]))
        .unwrap();
    assert_eq!(exec.run(spec).await.unwrap().exit.code, Some(7));
    exec.dispose().await;
}

#[tokio::test]
async fn sigpipe_has_its_default_disposition_in_children() {
    let exec = executor();
    let out = fg(&exec, "yes | head -n1; echo ${PIPESTATUS[0]}").await;
    assert_eq!(text(&out.tail), "y\n141\n");
    assert_eq!(out.exit.code, Some(0));
    exec.dispose().await;
}

#[tokio::test]
async fn credentials_are_scrubbed_from_the_child_unless_restored_and_the_terminal_is_quiet() {
    let exec = executor_with(|c| c.env_remove = vec!["PLAIN_NAME_REMOVED".into()]);
    // The variables are set in the child's request, never in this test process: the scrub
    // is applied to dsh's environment, so the restore path is what a request can reach.
    let spec = exec
        .resolve(
            ShellExecRequest::new(
                r#"echo "[$DSH_TEST_API_KEY] [$TERM] [$NO_COLOR] [$PAGER] [$GIT_PAGER]""#,
            )
            .env("DSH_TEST_API_KEY", "y"),
        )
        .unwrap();
    assert_eq!(
        text(&exec.run(spec).await.unwrap().tail),
        "[y] [dumb] [1] [cat] [cat]\n"
    );
    exec.dispose().await;
}

#[tokio::test]
async fn a_secret_in_dsh_s_own_environment_does_not_reach_a_child() {
    // A child process of this test binary carries the secret in *its* environment and runs
    // the executor there, so no variable is set in this process.
    if std::env::var_os("DSH_SCRUB_CHILD").is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let status = std::process::Command::new(exe)
        .args([
            "--exact",
            "processes::scrub_child_probe",
            "--ignored",
            "--nocapture",
        ])
        .env("DSH_SCRUB_CHILD", "1")
        .env("DSH_TEST_API_KEY", "x")
        .env("MY_SECRET_THING", "x")
        .env("PLAIN_REMOVED", "x")
        .env("KEEP_TOKEN", "kept")
        .status()
        .unwrap();
    assert!(status.success());
}

/// Runs only inside the child process the test above starts, with the secrets in its
/// environment.
#[tokio::test]
#[ignore = "run by a_secret_in_dsh_s_own_environment_does_not_reach_a_child"]
async fn scrub_child_probe() {
    let exec = executor_with(|c| {
        c.env_keep = vec!["KEEP_TOKEN".into()];
        c.env_remove = vec!["PLAIN_REMOVED".into()];
    });
    let out = fg(
        &exec,
        r#"echo "[$DSH_TEST_API_KEY][$MY_SECRET_THING][$PLAIN_REMOVED][$KEEP_TOKEN]""#,
    )
    .await;
    assert_eq!(text(&out.tail), "[][][][kept]\n");
    exec.dispose().await;
}

#[tokio::test]
async fn a_command_that_signals_itself_exited_by_that_signal() {
    let exec = executor();
    let out = fg(&exec, "kill -TERM $$").await;
    assert_eq!(out.exit.end, EndCause::Exited);
    assert_eq!(out.exit.signal.as_ref().unwrap().name, "SIGTERM");
    assert_eq!(out.exit.code, None);
    assert!(!out.exit.killed());
    exec.dispose().await;
}

#[tokio::test]
async fn bytes_are_kept_exactly_including_invalid_utf8() {
    let exec = executor();
    let out = fg(&exec, r"printf 'a\377b\376'").await;
    assert_eq!(&out.tail[..], [0x61, 0xff, 0x62, 0xfe]);
    exec.dispose().await;
}
