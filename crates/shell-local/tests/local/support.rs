//! Shared helpers: executors with short graces, unique markers, and "gone" checks that scan
//! `/proc` for every process of a test tree.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dsh_shell::{RunOutput, ShellExecRequest, ShellExecutor, TaskId};
use dsh_shell_local::{LocalShellConfig, LocalShellExecutor};
pub use dsh_test_support::processes::{
    alive, all_gone, describe, eventually, marker, sleepers, zombie_or_absent,
};

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
