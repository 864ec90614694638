//! Descendants that leave their task's process group on purpose are found and ended too.

use dsh_shell::{ShellExecRequest, ShellExecutor};

use crate::support::*;

fn escape(m: &str) -> String {
    format!("setsid sleep 1000.{m} & echo $!")
}

#[tokio::test]
async fn a_setsid_escapee_of_a_foreground_command_is_gone_when_run_returns() {
    let exec = executor();
    let m = marker();
    let out = fg(&exec, &escape(&m)).await;
    let pid = pid_in(&out.tail);
    assert!(
        zombie_or_absent(pid),
        "the escapee {pid} outlived its command"
    );
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn a_double_forked_daemon_is_ended_with_its_task() {
    let exec = executor();
    let m = marker();
    let out = fg(
        &exec,
        &format!("( setsid bash -c 'sleep 1000.{m} & sleep 1000.{m} & wait' >/dev/null 2>&1 & ); echo started"),
    )
    .await;
    assert_eq!(text(&out.tail), "started\n");
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn escapees_of_background_tasks_end_on_kill_and_on_dispose() {
    let exec = executor();
    let m = marker();
    let killed = bg(&exec, &format!("{}; sleep 1000.{m}", escape(&m))).await;
    let kept = marker();
    let disposed = bg(&exec, &format!("{}; sleep 1000.{kept}", escape(&kept))).await;
    eventually("both up", || sleepers(&m) >= 2 && sleepers(&kept) >= 2).await;
    exec.kill(killed).await.unwrap();
    exec.wait(killed).await.unwrap();
    let pid = pid_in(&read_all(&exec, killed, 1024).await);
    assert!(zombie_or_absent(pid));
    all_gone(&m).await;
    assert!(
        !alive(&kept).is_empty(),
        "another task's escapee is untouched by a kill"
    );
    let _ = disposed;
    exec.dispose().await;
    all_gone(&kept).await;
}

#[tokio::test]
async fn a_cancelled_run_ends_its_escapee() {
    let exec = executor();
    let m = marker();
    let spec = exec
        .resolve(ShellExecRequest::new(format!(
            "{}; sleep 1000.{m}",
            escape(&m)
        )))
        .unwrap();
    tokio::select! {
        _ = exec.run(spec) => panic!("never ends by itself"),
        () = eventually("up", || sleepers(&m) >= 2) => {}
    }
    all_gone(&m).await;
    exec.dispose().await;
}

#[tokio::test]
async fn another_executor_s_escapee_is_left_alone() {
    let one = executor();
    let two = executor();
    let m = marker();
    let other = marker();
    let theirs = bg(&two, &format!("{}; sleep 1000.{other}", escape(&other))).await;
    eventually("up", || sleepers(&other) >= 2).await;
    let out = fg(&one, &escape(&m)).await;
    assert!(zombie_or_absent(pid_in(&out.tail)));
    one.dispose().await;
    assert_eq!(
        sleepers(&other),
        2,
        "the other executor's tree is untouched"
    );
    two.release(theirs).await.unwrap();
    all_gone(&other).await;
    two.dispose().await;
}
