//! Starting one command: the checks before the spawn, the environment, the merged pipe and the
//! new session.

use std::ffi::OsString;
use std::io;
use std::process::Stdio;

use dsh_shell::{ShellError, ShellExecSpec};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin, Command};

use crate::config::Checked;
use crate::escapees::{self, MARKER_VAR};
use crate::inner::Sandboxed;

/// What a spawn hands the supervisor.
pub(crate) struct Spawned {
    pub child: Child,
    pub pid: i32,
    pub pipe: pipe::Receiver,
    pub stdin: Option<ChildStdin>,
}

/// The pipe is enlarged so a fast writer blocks less often; failure only costs speed.
const PIPE_BYTES: usize = 1 << 20;

/// Fails with `BadCwd` unless `spec.workdir` is a directory this process may enter.
pub(crate) fn check_workdir(spec: &ShellExecSpec) -> Result<(), ShellError> {
    let bad = |source: io::Error| ShellError::BadCwd {
        path: spec.workdir.clone(),
        source,
    };
    let meta = std::fs::metadata(&spec.workdir).map_err(bad)?;
    if !meta.is_dir() {
        return Err(bad(io::Error::from(io::ErrorKind::NotADirectory)));
    }
    rustix::fs::access(&spec.workdir, rustix::fs::Access::EXEC_OK).map_err(|e| bad(e.into()))
}

/// The child's environment, later wins: dsh's own minus scrubbed names, then the fixed
/// quiet-terminal settings, then the spec's additions (which may restore a scrubbed name).
pub(crate) fn environment(
    checked: &Checked,
    spec: &ShellExecSpec,
    marker: &str,
) -> Vec<(OsString, OsString)> {
    let config = &checked.config;
    let scrubbed = |name: &str| {
        if config.env_remove.iter().any(|n| n == name) {
            return true;
        }
        if config.env_keep.iter().any(|n| n == name) {
            return false;
        }
        let upper = name.to_ascii_uppercase();
        config
            .env_scrub
            .iter()
            .any(|s| !s.is_empty() && upper.contains(&s.to_ascii_uppercase()))
    };
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| {
            name.to_str()
                .is_none_or(|n| !scrubbed(n) && n != MARKER_VAR)
        })
        .collect();
    let fixed = [
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
    ];
    let mut set = |name: &str, value: &str| {
        env.retain(|(n, _)| n != name);
        env.push((name.into(), value.into()));
    };
    for (name, value) in fixed {
        set(name, value);
    }
    for (name, value) in &spec.env {
        set(name, value);
    }
    set(MARKER_VAR, marker);
    env
}

/// Spawns `<shell> -c <command>` leading its own process group (and, when dsh has a
/// controlling terminal, its own session), its stdout and stderr one pipe. Registers the
/// leader with the sweep's registry under the same lock.
pub(crate) fn spawn(
    checked: &Checked,
    spec: &ShellExecSpec,
    marker: &str,
    sandboxed: Option<&Sandboxed>,
) -> Result<Spawned, ShellError> {
    let failed = |source: io::Error| ShellError::Spawn {
        program: checked.shell.clone(),
        source,
    };
    let (writer, reader) = pipe::pipe().map_err(failed)?;
    let _ = rustix::pipe::fcntl_setpipe_size(&reader, PIPE_BYTES);
    let out = writer.into_blocking_fd().map_err(failed)?;
    let err = out.try_clone().map_err(failed)?;

    // A sandboxed command starts through the helper, which confines itself and `exec`s the
    // shell: the same pid, group and pipes as an unconfined one.
    let mut command = match sandboxed {
        Some(sandboxed) => {
            let mut command = Command::new(&sandboxed.helper);
            command
                .args(sandboxed.confinement.args())
                .arg(&checked.shell);
            command
        }
        None => Command::new(&checked.shell),
    };
    let mut environment = environment(checked, spec, marker);
    if let Some(sandboxed) = sandboxed {
        environment.retain(|(name, _)| name != "TMPDIR");
        environment.push(("TMPDIR".into(), sandboxed.tmp.clone().into_os_string()));
    }
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.workdir)
        .env_clear()
        .envs(environment)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    // Without a terminal to keep away from, a group of its own is enough, and it keeps the
    // spawn on the standard library's posix_spawn path: a fork copies dsh's page tables and
    // then faults on every page dsh writes, a cost that grows with dsh's memory (measured:
    // 1.8 ms of dsh's CPU a call instead of 3 to 5 over a 1,000-step session).
    match checked.has_terminal {
        true => new_session(&mut command),
        false => {
            command.process_group(0);
        }
    }

    let mut leaders = escapees::leaders();
    let spawned = command.spawn();
    // The parent's copies of the write end go with the command, or EOF would never arrive.
    drop(command);
    let mut child = spawned.map_err(failed)?;
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return Err(failed(io::Error::other("the spawned shell has no pid")));
    };
    leaders.insert(pid);
    drop(leaders);
    let stdin = child.stdin.take();
    Ok(Spawned {
        child,
        pid,
        pipe: reader,
        stdin,
    })
}

/// The child leads a new session (and so its own process group) without a controlling
/// terminal: a program that opens `/dev/tty` fails at once instead of stopping on SIGTTIN or
/// writing into dsh's terminal. Without a terminal in dsh's session the same holds for a
/// process-group leader, which cannot acquire one. The standard library resets the signal
/// mask and SIGPIPE either way.
fn new_session(command: &mut Command) {
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2), which
    // is async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()
                .map(|_| ())
                .map_err(io::Error::from)
        });
    }
}
