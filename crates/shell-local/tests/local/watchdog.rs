//! The watchdog's half: once its pipe from dsh ends, it ends every process of the executor it
//! watches — reported groups, their sessions, and marked processes that left them — and no
//! process of another executor.

use std::io::Cursor;
use std::process::{Child, Command};

use dsh_shell_local::watchdog;

use crate::support::*;

/// `bash -c <script>` in a new session (as a task leader runs), with `marker` in its
/// environment unless `None`.
fn leader(script: &str, marker: Option<&str>) -> Child {
    let mut command = Command::new("setsid");
    command
        .args(["bash", "-c", script])
        .env_remove("DSH_SHELL_TASK")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(marker) = marker {
        command.env("DSH_SHELL_TASK", marker);
    }
    command.spawn().unwrap()
}

/// Kills whatever of these markers is left, also when the test fails half-way.
struct Cleanup(Vec<String>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for m in &self.0 {
            for pid in alive(m) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

#[tokio::test]
async fn when_its_pipe_ends_the_watchdog_ends_everything_of_its_executor_and_nothing_else() {
    let (ours, unmarked, theirs) = (marker(), marker(), marker());
    let _cleanup = Cleanup(vec![ours.clone(), unmarked.clone(), theirs.clone()]);
    // A marked tree with a child that left for a session of its own.
    let mut marked = leader(
        &format!("setsid sleep 1000.{ours} & sleep 1000.{ours}"),
        Some("watched-nonce.1"),
    );
    // A reported leader whose tree dropped the marker: found by its session.
    let mut bare = leader(&format!("sleep 1000.{unmarked} & wait"), None);
    // Another executor's task.
    let mut other = leader(&format!("sleep 1000.{theirs}"), Some("other-nonce.1"));
    eventually("every tree runs", || {
        sleepers(&ours) == 2 && sleepers(&unmarked) == 1 && sleepers(&theirs) == 1
    })
    .await;
    let reports = format!(
        "+{}\n+{}\n+999999\n-999999\nnot a report\n\u{e9}x\n+-3\n",
        marked.id(),
        bare.id()
    );
    let killed =
        tokio::task::spawn_blocking(move || watchdog::serve(Cursor::new(reports), "watched-nonce"))
            .await
            .unwrap();
    assert!(
        killed >= 1,
        "the escaped child is found by its marker: {killed}"
    );
    all_gone(&ours).await;
    all_gone(&unmarked).await;
    assert_eq!(
        sleepers(&theirs),
        1,
        "another executor's task is left alone"
    );
    let _ = other.kill();
    for child in [&mut marked, &mut bare, &mut other] {
        let _ = child.wait();
    }
    all_gone(&theirs).await;
}

#[tokio::test]
async fn an_executor_whose_watchdog_is_gone_or_missing_still_runs_and_disposes() {
    for program in ["/bin/false", "/nonexistent/watchdog"] {
        let exec = executor_with(|c| c.watchdog = Some(program.into()));
        let out = fg(&exec, "echo fine").await;
        assert_eq!(text(&out.tail), "fine\n", "{program}");
        exec.dispose().await;
    }
}

#[tokio::test]
async fn told_that_dsh_ended_everything_the_watchdog_exits_without_a_sweep() {
    let ours = marker();
    let _cleanup = Cleanup(vec![ours.clone()]);
    let mut marked = leader(&format!("sleep 1000.{ours}"), Some("clean-nonce.1"));
    eventually("the tree runs", || sleepers(&ours) == 1).await;
    let reports = format!("+{}\n!\n", marked.id());
    let killed =
        tokio::task::spawn_blocking(move || watchdog::serve(Cursor::new(reports), "clean-nonce"))
            .await
            .unwrap();
    assert_eq!(killed, 0);
    assert_eq!(sleepers(&ours), 1, "nothing was swept");
    let _ = marked.kill();
    let _ = marked.wait();
    all_gone(&ours).await;
}
