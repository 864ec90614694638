//! The shell's sandbox on this machine's kernel: commands started through the dsh binary as
//! the sandbox helper are confined by Landlock and seccomp, keep the executor's process
//! handling, and are refused (never run unconfined) when the kernel cannot confine them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;

use dsh_shell::{SandboxPolicy, ShellError, ShellExecRequest, ShellExecutor};
use dsh_shell_local::{LocalShellConfig, LocalShellExecutor, sandbox};

/// An executor whose sandbox helper (and watchdog) is the built dsh binary.
fn executor() -> Arc<LocalShellExecutor> {
    LocalShellExecutor::new(LocalShellConfig {
        sandbox_helper: Some(dsh_e2e::binary().to_path_buf()),
        watchdog: Some(dsh_e2e::binary().to_path_buf()),
        ..LocalShellConfig::default()
    })
    .unwrap()
}

fn workspace(dir: &Path, network: bool) -> SandboxPolicy {
    SandboxPolicy::WorkspaceWrite {
        writable: vec![dir.to_path_buf()],
        network,
    }
}

async fn run(
    exec: &LocalShellExecutor,
    dir: &Path,
    policy: SandboxPolicy,
    command: &str,
) -> (i32, String) {
    let spec = exec
        .resolve(ShellExecRequest::new(command).workdir(dir).sandbox(policy))
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    (
        out.exit.code.unwrap_or(-1),
        String::from_utf8_lossy(&out.tail).into_owned(),
    )
}

#[test]
fn the_probe_reports_the_kernel_s_landlock() {
    let achieved = sandbox::probe(dsh_e2e::binary()).unwrap();
    assert!(achieved.abi >= 1, "{achieved:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_write_confines_writes_to_the_project_and_reads_stay_open() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let exec = executor();
    let policy = workspace(&project, false);
    let (code, out) = run(&exec, &project, policy.clone(), "touch ../outside").await;
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!root.path().join("outside").exists());
    let (code, out) = run(
        &exec,
        &project,
        policy.clone(),
        "echo made > inside && cat inside",
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "made\n"));
    let (code, out) = run(
        &exec,
        &project,
        policy.clone(),
        "cat /etc/hostname > /dev/null && echo read",
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "read\n"));
    // The private temporary directory is writable; the system's is not.
    let (code, out) = run(
        &exec,
        &project,
        policy.clone(),
        "mktemp && ! touch /tmp/dsh-sandbox-probe-file",
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(!Path::new("/tmp/dsh-sandbox-probe-file").exists());
    // Read-only: nothing in the project either.
    let (code, _) = run(&exec, &project, SandboxPolicy::ReadOnly, "touch nope").await;
    assert_ne!(code, 0);
    assert!(!project.join("nope").exists());
    exec.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_network_is_off_unless_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = tempfile::tempdir().unwrap();
    let exec = executor();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let (code, out) = run(
        &exec,
        project.path(),
        workspace(project.path(), false),
        &connect,
    )
    .await;
    assert_ne!(code, 0, "{out}");
    assert!(!out.contains("connected"), "{out}");
    let (code, out) = run(
        &exec,
        project.path(),
        workspace(project.path(), true),
        &connect,
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "connected\n"));
    exec.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_escapee_in_the_sandbox_is_still_swept() {
    let project = tempfile::tempdir().unwrap();
    let exec = executor();
    let marker = format!("DSH_SANDBOX_ESCAPEE={}", std::process::id());
    let command = format!("{marker} setsid sleep 600 > /dev/null 2>&1 & echo started");
    let (code, out) = run(
        &exec,
        project.path(),
        workspace(project.path(), false),
        &command,
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "started\n"));
    exec.dispose().await;
    dsh_e2e::wait_gone(&marker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_landlock_a_sandboxed_command_is_refused_not_run_unconfined() {
    let project = tempfile::tempdir().unwrap();
    let probe = std::process::Command::new(dsh_e2e::binary())
        .args([sandbox::ARG, "probe"])
        .env(sandbox::LANDLOCK_VAR, "off")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&probe.stderr);
    assert!(
        said.starts_with("none the kernel does not enforce Landlock"),
        "{said}"
    );
    // Started by hand with the variable set, the helper refuses and runs nothing.
    let marker = project.path().join("ran");
    let refused = std::process::Command::new(dsh_e2e::binary())
        .args([sandbox::ARG, "offline", "0", "--", "touch"])
        .arg(&marker)
        .env(sandbox::LANDLOCK_VAR, "off")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(i32::from(sandbox::REFUSED)));
    assert!(!marker.exists());
    // An executor whose helper cannot confine refuses before starting anything.
    let blind = LocalShellExecutor::new(LocalShellConfig {
        sandbox_helper: Some("/nonexistent/dsh".into()),
        ..LocalShellConfig::default()
    })
    .unwrap();
    let spec = blind
        .resolve(
            ShellExecRequest::new(format!("touch {}", marker.display()))
                .sandbox(SandboxPolicy::ReadOnly),
        )
        .unwrap();
    let error = blind.run(spec).await.unwrap_err();
    assert!(
        matches!(
            error,
            ShellError::Sandbox {
                policy: "read-only",
                ..
            }
        ),
        "{error}"
    );
    assert!(!marker.exists());
    assert!(blind.sandbox_status().is_err());
    // Full access needs no helper and runs as before.
    let spec = blind.resolve(ShellExecRequest::new("echo free")).unwrap();
    assert_eq!(&blind.run(spec).await.unwrap().tail[..], b"free\n");
    blind.dispose().await;
}

#[test]
fn dsh_run_confines_commands_to_the_project_by_default_and_says_when_it_cannot() {
    let sandbox = dsh_e2e::Sandbox::new();
    let script = one_command(
        &sandbox,
        serde_json::json!({"command": "touch inside; touch ../outside"}),
    );
    let out = sandbox
        .dsh(["--replay", &script, "run", "go"])
        .output()
        .unwrap();
    let stderr = dsh_e2e::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(sandbox.work().join("inside").exists());
    assert!(!sandbox.root.path().join("outside").exists(), "{stderr}");
    assert!(!stderr.contains("sandbox cannot start"), "{stderr}");
    // Full access is asked for by name.
    let out = sandbox
        .dsh(["--replay", &script, "--sandbox", "full-access", "run", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(sandbox.root.path().join("outside").exists());
    std::fs::remove_file(sandbox.root.path().join("outside")).unwrap();
    // Without Landlock: one notice, and in accept-edits the command asks (here, with no
    // terminal, it is refused) instead of running unconfined.
    let out = sandbox
        .dsh_without_terminal([
            "--replay",
            &script,
            "run",
            "--permission",
            "accept-edits",
            "go",
        ])
        .env(sandbox::LANDLOCK_VAR, "off")
        .output()
        .unwrap();
    let stderr = dsh_e2e::text(&out.stderr);
    let notices: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("sandbox cannot start here"))
        .collect();
    assert_eq!(notices.len(), 1, "{stderr}");
    assert!(
        notices[0].contains("dsh asks before every command"),
        "{stderr}"
    );
    assert!(!sandbox.root.path().join("outside").exists(), "{stderr}");
    // `dsh config` says what the kernel gives.
    let config = sandbox
        .dsh(["--replay", "demo", "config"])
        .output()
        .unwrap();
    let shown = dsh_e2e::text(&config.stdout);
    assert!(
        shown.contains("sandbox.policy = \"workspace-write\""),
        "{shown}"
    );
    assert!(shown.contains("sandbox.kernel = \"Landlock ABI"), "{shown}");
}

#[test]
fn leaving_the_sandbox_with_no_one_to_ask_is_refused() {
    let sandbox = dsh_e2e::Sandbox::new();
    let script = one_command(
        &sandbox,
        serde_json::json!({"command": "touch ../outside", "outside_sandbox": "it must"}),
    );
    let out = sandbox
        .dsh(["--replay", &script, "run", "go"])
        .output()
        .unwrap();
    let stderr = dsh_e2e::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!sandbox.root.path().join("outside").exists(), "{stderr}");
    // The model was told why, in the call's result.
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(
        stored.contains("this session has no one to ask"),
        "{stored}"
    );
}

/// A replay script that makes one bash call with `arguments`, then answers "done".
fn one_command(sandbox: &dsh_e2e::Sandbox, arguments: serde_json::Value) -> String {
    sandbox.script(
        "command",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": arguments}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

#[test]
fn writable_roots_from_the_configuration_are_writable_too() {
    let sandbox = dsh_e2e::Sandbox::new();
    let extra = sandbox.root.path().join("extra");
    std::fs::create_dir(&extra).unwrap();
    let config = sandbox.root.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[sandbox]\nwritable_roots = [{:?}]\n",
            extra.display().to_string()
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let script = one_command(
        &sandbox,
        serde_json::json!({"command": format!("touch {}/ok; touch ../other", extra.display())}),
    );
    let out = sandbox
        .dsh(["--config", &config, "--replay", &script, "run", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dsh_e2e::text(&out.stderr));
    assert!(extra.join("ok").exists());
    assert!(!sandbox.root.path().join("other").exists());
    let shown = dsh_e2e::text(
        &sandbox
            .dsh(["--config", &config, "config"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(shown.contains("sandbox.writable_roots = ["), "{shown}");
    // A relative directory is refused, naming the setting.
    std::fs::write(&config, "[sandbox]\nwritable_roots = [\"build\"]\n").unwrap();
    let out = sandbox
        .dsh(["--config", &config, "config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(dsh_e2e::text(&out.stderr).contains("is not an absolute path"));
}
