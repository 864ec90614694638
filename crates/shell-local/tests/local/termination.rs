//! Ending process trees: kill, timeouts, cancellation, stragglers, first cause wins, and
//! never a signal to a group once it is gone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_shell::{EndCause, KillCause, ShellError, ShellExecRequest, ShellExecutor, TaskState};
use dsh_shell_local::signal::{OsSignaller, Signaller};

use crate::support::*;

fn tree(m: &str) -> String {
    format!("sleep 1000.{m} & sleep 1000.{m}; wait")
}

#[tokio::test]
async fn kill_ends_the_whole_tree_and_records_the_request() {
    let exec = executor();
    let m = marker();
    let id = bg(&exec, &tree(&m)).await;
    eventually("tree up", || sleepers(&m) == 2).await;
    exec.kill(id).await.unwrap();
    let exit = exec.wait(id).await.unwrap();
    assert_eq!(exit.end, EndCause::Killed(KillCause::Requested));
    assert_eq!(exit.signal.unwrap().name, "SIGTERM");
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_child_trapping_term_is_killed_after_the_grace() {
    let exec = executor();
    let m = marker();
    // An ignored TERM survives exec, so both sleeps and the leader ignore it.
    let command = format!(
        "bash -c 'trap \"\" TERM; exec sleep 1000.{m}' & trap '' TERM; sleep 1000.{m}; wait"
    );
    let id = bg(&exec, &command).await;
    eventually("tree up", || sleepers(&m) == 2).await;
    exec.kill(id).await.unwrap();
    let exit = exec.wait(id).await.unwrap();
    assert_eq!(exit.end, EndCause::Killed(KillCause::Requested));
    assert_eq!(
        exit.signal.unwrap().name,
        "SIGKILL",
        "the leader trapped TERM too"
    );
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_stopped_command_is_continued_and_ended_by_kill() {
    let exec = executor();
    let m = marker();
    let id = bg(&exec, &format!("kill -STOP $$; sleep 1000.{m}")).await;
    eventually("stopped", || {
        exec.list().first().is_some_and(|t| t.id == id)
            && alive(&m).iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    s.rsplit_once(')')
                        .is_some_and(|(_, r)| r.trim_start().starts_with('T'))
                })
            })
    })
    .await;
    exec.kill(id).await.unwrap();
    exec.wait(id).await.unwrap();
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn kill_twice_sends_one_term_and_kill_after_exit_says_already_finished() {
    let exec = executor();
    let m = marker();
    let id = bg(
        &exec,
        &format!("trap 'echo got-term; exit 0' TERM; sleep 1000.{m} & wait"),
    )
    .await;
    eventually("up", || sleepers(&m) == 1).await;
    exec.kill(id).await.unwrap();
    exec.kill(id).await.unwrap();
    let exit = exec.wait(id).await.unwrap();
    let out = read_all(&exec, id, 1024).await;
    assert_eq!(text(&out).matches("got-term").count(), 1);
    assert!(matches!(
        exec.kill(id).await,
        Err(ShellError::AlreadyFinished { exit: e, .. }) if *e == exit
    ));
    exec.dispose().await;
}

#[tokio::test]
async fn a_timeout_ends_the_command_with_sigterm_and_keeps_its_output() {
    let exec = executor();
    let m = marker();
    let spec = exec
        .resolve(
            ShellExecRequest::new(format!("echo before; sleep 1000.{m}"))
                .timeout(Duration::from_millis(100)),
        )
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert_eq!(
        out.exit.end,
        EndCause::TimedOut {
            after: Duration::from_millis(100)
        }
    );
    assert!(out.exit.timed_out());
    assert_eq!(out.exit.signal.unwrap().name, "SIGTERM");
    assert_eq!(text(&out.tail), "before\n");
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_timeout_trapped_with_exit_zero_is_still_a_timeout() {
    let exec = executor();
    let spec = exec
        .resolve(
            ShellExecRequest::new("trap 'exit 0' TERM; sleep 1000 & wait")
                .timeout(Duration::from_millis(100)),
        )
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert!(out.exit.timed_out());
    assert_eq!(out.exit.code, Some(0));
    exec.dispose().await;
}

/// Members still alive when the leader of an ended command exits were already asked to stop
/// by that ending; they are not processes the command left behind, so whether one of them is
/// slower to die than the leader must not change the result.
#[tokio::test]
async fn members_of_a_timed_out_command_are_not_reported_as_left_behind() {
    let exec = executor();
    let m = marker();
    // The child ignores TERM and so certainly outlives the leader, which exits on TERM.
    let command =
        format!("bash -c 'trap \"\" TERM; exec sleep 1000.{m}' & trap 'exit 0' TERM; wait");
    let spec = exec
        .resolve(ShellExecRequest::new(command).timeout(Duration::from_millis(100)))
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert!(out.exit.timed_out());
    assert_eq!(out.exit.code, Some(0));
    assert!(!out.exit.stragglers_terminated);
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_timeout_trapped_and_ignored_is_ended_by_sigkill() {
    let exec = executor();
    let spec = exec
        .resolve(
            ShellExecRequest::new("trap '' TERM; sleep 1000 & wait; wait")
                .timeout(Duration::from_millis(100)),
        )
        .unwrap();
    let out = exec.run(spec).await.unwrap();
    assert!(out.exit.timed_out());
    assert_eq!(out.exit.signal.unwrap().name, "SIGKILL");
    exec.dispose().await;
}

#[tokio::test]
async fn the_first_cause_wins() {
    let exec = executor();
    // Timeout first, then kill: still a timeout.
    let spec = exec
        .resolve(
            ShellExecRequest::new("trap '' TERM; sleep 1000 & wait; wait")
                .background(true)
                .timeout(Duration::from_millis(50)),
        )
        .unwrap();
    let id = exec.start(spec).await.unwrap();
    eventually("terminating", || {
        exec.list()
            .iter()
            .any(|t| t.id == id && matches!(t.state, TaskState::Terminating(_)))
    })
    .await;
    exec.kill(id).await.unwrap();
    assert!(exec.wait(id).await.unwrap().timed_out());
    // Kill first, then the deadline passes during the grace: still a requested kill.
    let spec = exec
        .resolve(
            ShellExecRequest::new("trap '' TERM; sleep 1000 & wait; wait")
                .background(true)
                .timeout(Duration::from_millis(150)),
        )
        .unwrap();
    let id = exec.start(spec).await.unwrap();
    exec.kill(id).await.unwrap();
    let exit = exec.wait(id).await.unwrap();
    assert_eq!(exit.end, EndCause::Killed(KillCause::Requested));
    exec.dispose().await;
}

#[tokio::test]
async fn dropping_run_cancels_the_tree_and_forgets_the_task() {
    let exec = executor();
    let m = marker();
    let spec = exec.resolve(ShellExecRequest::new(tree(&m))).unwrap();
    let run = exec.run(spec);
    tokio::select! {
        _ = run => panic!("the tree never ends by itself"),
        () = eventually("tree up", || sleepers(&m) >= 2) => {}
    }
    all_gone(&m).await;
    eventually("table empty", || exec.list().is_empty()).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_grandchild_holding_the_pipe_delays_the_result_by_the_drain_only() {
    let exec = executor();
    let m = marker();
    let out = fg(&exec, &format!("sleep 1000.{m} & echo hi")).await;
    assert_eq!(text(&out.tail), "hi\n");
    assert_eq!(out.exit.code, Some(0));
    assert!(out.exit.stragglers_terminated);
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_straggler_without_the_pipe_is_terminated_too() {
    let exec = executor();
    let m = marker();
    let out = fg(&exec, &format!("sleep 1000.{m} >/dev/null 2>&1 & true")).await;
    assert!(out.exit.stragglers_terminated);
    assert_eq!(out.exit.code, Some(0));
    all_gone(&m).await;
    exec.dispose().await;
}

/// Wraps the real signaller and records every call with its answer.
#[derive(Debug, Default)]
struct Recording {
    calls: Mutex<Vec<(i32, Option<i32>, bool)>>,
}

impl Signaller for Recording {
    fn signal_group(&self, pgid: i32, signal: Option<i32>) -> std::io::Result<()> {
        let result = OsSignaller.signal_group(pgid, signal);
        let gone = matches!(&result, Err(e) if e.raw_os_error() == Some(3));
        self.calls.lock().unwrap().push((pgid, signal, gone));
        result
    }
}

#[tokio::test]
async fn no_signal_reaches_a_group_once_it_was_seen_gone() {
    let recording = Arc::new(Recording::default());
    let signaller: Arc<dyn Signaller> = recording.clone();
    let exec = executor_with(|c| c.signaller = Some(signaller));
    let m = marker();
    let id = bg(&exec, &format!("trap '' TERM; sleep 1000.{m} & wait; wait")).await;
    eventually("up", || sleepers(&m) == 1).await;
    exec.kill(id).await.unwrap();
    exec.release(id).await.unwrap();
    let at_release = recording.calls.lock().unwrap().len();
    exec.dispose().await;
    let calls = recording.calls.lock().unwrap().clone();
    assert_eq!(
        calls.len(),
        at_release,
        "disposal signalled a group already gone: {calls:?}"
    );
    let pgid = calls[0].0;
    let mine: Vec<_> = calls.iter().filter(|c| c.0 == pgid).collect();
    assert_eq!(
        mine.last().unwrap().1,
        None,
        "the last call was the probe that saw it gone: {mine:?}"
    );
    assert!(
        mine.iter().any(|c| c.1 == Some(9)),
        "SIGKILL went out after the grace"
    );
    let kill_at = mine.iter().position(|c| c.1 == Some(9)).unwrap();
    assert!(
        mine[..kill_at].iter().filter(|c| c.1.is_some()).count() == 2,
        "one SIGTERM and one SIGCONT before the SIGKILL: {mine:?}"
    );
}
