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
        .args([sandbox::ARG, "offline", "nogit", "0", "--", "touch"])
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
    // In `allow` mode (the default of `dsh run`) too: the command is asked about, never run
    // unconfined unasked.
    std::fs::remove_file(sandbox.work().join("inside")).unwrap();
    let out = sandbox
        .dsh_without_terminal(["--replay", &script, "run", "go"])
        .env(sandbox::LANDLOCK_VAR, "off")
        .output()
        .unwrap();
    let stderr = dsh_e2e::text(&out.stderr);
    assert!(stderr.contains("sandbox cannot start here"), "{stderr}");
    assert!(!sandbox.work().join("inside").exists(), "{stderr}");
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
    assert!(
        shown.contains(".git/hooks and .git/config kept read-only"),
        "{shown}"
    );
}

#[test]
fn leaving_the_sandbox_with_no_one_to_ask_is_refused() {
    let sandbox = dsh_e2e::Sandbox::new();
    let script = one_command(
        &sandbox,
        serde_json::json!({"command": "touch ../outside", "outside_sandbox": "it must"}),
    );
    let out = sandbox
        .dsh_without_terminal(["--replay", &script, "run", "go"])
        .output()
        .unwrap();
    let stderr = dsh_e2e::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!sandbox.root.path().join("outside").exists(), "{stderr}");
    // The model was told why, in the call's result.
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(
        stored.contains("there is no terminal to ask on"),
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
    // `dsh config` with the file as it is, or with `text` written to it first.
    let dsh_config = |text: Option<&str>| {
        if let Some(text) = text {
            std::fs::write(&config, text).unwrap();
        }
        sandbox
            .dsh(["--config", &config, "config"])
            .output()
            .unwrap()
    };
    let shown = dsh_e2e::text(&dsh_config(None).stdout);
    assert!(shown.contains("sandbox.writable_roots = ["), "{shown}");
    // A relative directory is refused, naming the setting.
    let out = dsh_config(Some("[sandbox]\nwritable_roots = [\"build\"]\n"));
    assert_eq!(out.status.code(), Some(6));
    assert!(dsh_e2e::text(&out.stderr).contains("is not an absolute path"));
    // An MCP server is sandboxed when its table says so; one reached at a URL cannot be.
    let out = dsh_config(Some(
        "[mcp_servers.files]\ncommand = \"files-server\"\nsandbox = true\n",
    ));
    let shown = dsh_e2e::text(&out.stdout);
    assert!(shown.contains("stdio: files-server; sandboxed"), "{shown}");
    let out = dsh_config(Some(
        "[mcp_servers.web]\nurl = \"https://example.org/mcp\"\nsandbox = true\n",
    ));
    assert_eq!(out.status.code(), Some(6));
    assert!(dsh_e2e::text(&out.stderr).contains("`sandbox` confines a server dsh starts"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_hooks_and_config_stay_read_only_in_a_writable_project() {
    let project = tempfile::tempdir().unwrap();
    let git = project.path().join(".git");
    std::fs::create_dir_all(git.join("objects")).unwrap();
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    let exec = executor();
    let status = exec.sandbox_status().unwrap();
    assert_eq!(status.git_unguarded, None, "{status:?}");
    assert!(exec.sandbox().unwrap().is_empty());
    let policy = workspace(project.path(), false);
    // The hooks directory and the config file are made (empty) so neither can be planted.
    for attack in [
        "echo evil > .git/hooks/pre-commit",
        "printf '[core]\\n\\thooksPath = /tmp\\n' >> .git/config",
        "mv .git .git-old",
        "rm -rf .git/hooks",
    ] {
        let (code, out) = run(&exec, project.path(), policy.clone(), attack).await;
        assert_ne!(code, 0, "{attack}: {out}");
    }
    assert!(!git.join("hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(git.join("config")).unwrap(), "");
    assert!(git.join("HEAD").exists() && !project.path().join(".git-old").exists());
    // The rest of the repository and the project stay writable (git itself works).
    let (code, out) = run(
        &exec,
        project.path(),
        policy.clone(),
        "echo x > .git/objects/probe && echo y > file && cat .git/objects/probe file",
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "x\ny\n"));
    // Outside the sandbox nothing was mounted: the hooks are writable as before.
    std::fs::write(git.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
    exec.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_asked_to_be_sandboxed_runs_confined_or_not_at_all() {
    use dsh_e2e::mcp_fault::{FaultReports, REPORT_VAR};
    use dsh_mcp::{McpConnector, ServerSpec, Transport};
    let exec = executor();
    let project = tempfile::tempdir().unwrap();
    let mut reports = FaultReports::new();
    let report_path = reports.path().display().to_string();
    let spec = |extra: Option<(&str, &str)>| {
        let mut spec = ServerSpec::stdio(
            "boxed",
            env!("CARGO_BIN_EXE_mcp-fault-server"),
            Vec::<String>::new(),
        );
        if let Transport::Stdio { env, .. } = &mut spec.transport {
            env.push((REPORT_VAR.into(), report_path.clone()));
            env.extend(extra.map(|(k, v)| (k.to_owned(), v.to_owned())));
        }
        spec.sandbox = Some(dsh_mcp::Sandbox {
            writable: vec![project.path().to_path_buf()],
            network: false,
        });
        spec
    };
    let connector = dsh_mcp_rmcp::RmcpConnector::contained(exec.clone());
    let server = connector.connect(&spec(None)).await.unwrap();
    assert!(!server.tools().await.unwrap().is_empty());
    let pid = reports.wait_for("started").await;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(
        status.contains("Seccomp:\t2"),
        "the network filter: {status}"
    );
    server.shutdown().await;
    // Where the kernel cannot confine it, it is not started: never run unconfined.
    let refused = connector
        .connect(&spec(Some((sandbox::LANDLOCK_VAR, "off"))))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            &refused,
            dsh_mcp::McpError::Start { .. } | dsh_mcp::McpError::Timeout { .. }
        ),
        "{refused}"
    );
    // With no executor to confine it, the connector refuses before starting anything.
    let alone = dsh_mcp_rmcp::RmcpConnector::default()
        .connect(&spec(None))
        .await
        .err()
        .unwrap();
    assert!(alone.to_string().contains("to run sandboxed"), "{alone}");
    exec.dispose().await;
}

#[test]
fn an_unprivileged_helper_guards_git_in_a_user_namespace_of_its_own() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".git/hooks")).unwrap();
    std::fs::write(project.path().join(".git/config"), "").unwrap();
    for dir in [project.path(), &project.path().join(".git")] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // As root here, the helper is started as `nobody`, the way a user starts it.
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let mut command = match root {
        true => {
            let mut setpriv = std::process::Command::new("setpriv");
            setpriv
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(dsh_e2e::binary());
            setpriv
        }
        false => std::process::Command::new(dsh_e2e::binary()),
    };
    let out = command
        .args([sandbox::ARG, "offline", "git", "1"])
        .arg(project.path())
        .args([
            "--",
            "sh",
            "-c",
            "echo made > inside; echo evil > .git/hooks/pre-commit",
        ])
        .current_dir(project.path())
        .output()
        .unwrap();
    let said = dsh_e2e::text(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(i32::from(sandbox::REFUSED)),
        "{said}"
    );
    assert!(project.path().join("inside").exists(), "{said}");
    assert!(said.contains("Read-only file system"), "{said}");
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
}
