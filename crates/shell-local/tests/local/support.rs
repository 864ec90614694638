//! Shared helpers: executors with short graces, unique markers, and "gone" checks that scan
//! `/proc` for every process of a test tree.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dsh_shell::{RunOutput, ShellExecRequest, ShellExecutor, TaskId};
use dsh_shell_local::{LocalShellConfig, LocalShellExecutor};

/// Short graces, as the suite's budgets assume.
pub fn config() -> LocalShellConfig {
    LocalShellConfig {
        term_grace: Duration::from_millis(200),
        drain_grace: Duration::from_millis(100),
        ..LocalShellConfig::default()
    }
}

pub fn executor() -> Arc<LocalShellExecutor> {
    LocalShellExecutor::new(config()).unwrap()
}

pub fn executor_with(edit: impl FnOnce(&mut LocalShellConfig)) -> Arc<LocalShellExecutor> {
    let mut config = config();
    edit(&mut config);
    LocalShellExecutor::new(config).unwrap()
}

/// A number no other test of this process uses, for `sleep 1000.<n>` style markers.
pub fn marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of live (non-zombie) processes whose argv contains `needle`.
pub fn alive(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(needle) || zombie_or_absent(pid) {
            continue;
        }
        out.push(pid);
    }
    out
}

/// Live processes running exactly `sleep 1000.<m>`: the tree's members, not its leader.
pub fn sleepers(m: &str) -> usize {
    let argv = format!("sleep\01000.{m}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == argv.as_bytes())
                && !zombie_or_absent(*pid)
        })
        .count()
}

/// What is alive with `needle`, for failure messages.
pub fn describe(needle: &str) -> String {
    alive(needle)
        .iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{stat} :: {}\n",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect()
}

pub fn zombie_or_absent(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Polls (with a deadline far beyond the graces) until `condition` holds.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub async fn all_gone(needle: &str) {
    eventually(&format!("no process with {needle:?} in its argv"), || {
        alive(needle).is_empty()
    })
    .await;
}

pub async fn fg(exec: &LocalShellExecutor, command: &str) -> RunOutput {
    let spec = exec.resolve(ShellExecRequest::new(command)).unwrap();
    exec.run(spec).await.unwrap()
}

pub async fn bg(exec: &LocalShellExecutor, command: &str) -> TaskId {
    let spec = exec
        .resolve(ShellExecRequest::new(command).background(true))
        .unwrap();
    exec.start(spec).await.unwrap()
}

pub async fn bg_owned(exec: &LocalShellExecutor, command: &str, owner: Option<&str>) -> TaskId {
    let mut request = ShellExecRequest::new(command).background(true);
    request.owner = owner.map(str::to_owned);
    exec.start(exec.resolve(request).unwrap()).await.unwrap()
}

/// The whole stream of a finished task, read in `limit`-byte steps.
pub async fn read_all(exec: &LocalShellExecutor, id: TaskId, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let chunk = exec.read_output(id, at, limit).await.unwrap();
        out.extend_from_slice(&chunk.bytes);
        at = chunk.next;
        if chunk.exit.is_some() && chunk.next == chunk.total {
            return out;
        }
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits until the file at `path` has vanished.
pub async fn file_gone(path: PathBuf) {
    eventually(&format!("{} removed", path.display()), || !path.exists()).await;
}

/// Reads a pid printed by a command (`echo $!`).
pub fn pid_in(output: &[u8]) -> i32 {
    text(output)
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .expect("a pid in the output")
}
