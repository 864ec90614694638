//! Ids, owners, the table's retention and limits, waiting and releasing, completion
//! listeners, disposal, the drop backstop and the plugin's reload.

use std::sync::{Arc, Mutex};

use dsh_kernel::Runtime;
use dsh_shell::{
    EndCause, KillCause, ShellError, ShellExecRequest, ShellExecutor, TaskDone, TaskId,
};
use dsh_shell_local::ShellLocalPlugin;

use crate::support::*;

#[tokio::test]
async fn ids_are_unique_across_executors_and_never_reused() {
    let (one, two) = (executor(), executor());
    let mut ids = Vec::new();
    for _ in 0..10 {
        ids.push(bg(&one, "true").await);
        ids.push(bg(&two, "true").await);
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for id in &ids[..4] {
        let _ = one.release(*id).await;
        let _ = two.release(*id).await;
    }
    let next = bg(&one, "true").await;
    assert!(next > *ids.last().unwrap());
    one.dispose().await;
    two.dispose().await;
}

#[tokio::test]
async fn owners_are_stored_verbatim_and_read_only_through_owner_of() {
    let exec = executor();
    let a = bg_owned(&exec, "true", Some("a")).await;
    let empty = bg_owned(&exec, "true", Some("")).await;
    let none = bg_owned(&exec, "true", None).await;
    assert_eq!(exec.owner_of(a).as_deref(), Some("a"));
    assert_eq!(exec.owner_of(empty).as_deref(), Some(""));
    assert_eq!(exec.owner_of(none), None);
    assert_eq!(exec.owner_of("sh-999999999".parse().unwrap()), None);
    let unissued = format!("{}-999999999", a.to_string().rsplit_once('-').unwrap().0);
    assert_eq!(exec.owner_of(unissued.parse().unwrap()), None);
    exec.release(a).await.unwrap();
    assert_eq!(exec.owner_of(a), None, "a released id has no owner");
    exec.dispose().await;
}

#[tokio::test]
async fn a_complete_foreground_run_is_forgotten_and_a_truncated_one_is_retained() {
    let exec = executor_with(|c| c.output_cap = 4);
    let out = fg(&exec, "echo x").await;
    assert!(!out.retained);
    assert!(matches!(
        exec.read_output(out.task_id, 0, 1).await,
        Err(ShellError::UnknownTask(_))
    ));
    let out = fg(&exec, "echo 0123456789").await;
    assert!(out.retained);
    assert_eq!(
        &exec.read_output(out.task_id, 0, 4).await.unwrap().bytes[..],
        b"0123"
    );
    exec.dispose().await;
}

#[tokio::test]
async fn beyond_the_finished_limit_the_earliest_finished_is_evicted() {
    let exec = executor_with(|c| c.max_finished_tasks = 2);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = bg(&exec, "true").await;
        exec.wait(id).await.unwrap();
        ids.push(id);
    }
    let listed: Vec<TaskId> = exec.list().iter().map(|t| t.id).collect();
    assert_eq!(listed, ids[1..]);
    exec.dispose().await;
}

#[tokio::test]
async fn beyond_the_running_limit_nothing_is_spawned_and_the_others_are_untouched() {
    let exec = executor_with(|c| c.max_running_tasks = 2);
    let m = marker();
    let a = bg(&exec, &format!("sleep 1000.{m}")).await;
    let b = bg(&exec, &format!("sleep 1000.{m}")).await;
    let spec = exec
        .resolve(ShellExecRequest::new("true").background(true))
        .unwrap();
    assert!(matches!(
        exec.start(spec).await,
        Err(ShellError::TooManyTasks { limit: 2 })
    ));
    assert_eq!(exec.list().len(), 2);
    exec.kill(a).await.unwrap();
    exec.wait(a).await.unwrap();
    assert_eq!(exec.read_output(b, 0, 1).await.unwrap().exit, None);
    exec.dispose().await;
    all_gone(&m).await;
}

#[tokio::test]
async fn a_dropped_wait_changes_nothing_and_the_other_sees_the_kill() {
    let exec = executor();
    let id = bg(&exec, "sleep 1000").await;
    let first = exec.wait(id);
    drop(exec.wait(id));
    exec.kill(id).await.unwrap();
    assert_eq!(
        first.await.unwrap().end,
        EndCause::Killed(KillCause::Requested)
    );
    exec.dispose().await;
}

#[tokio::test]
async fn release_ends_a_running_task_and_forgets_it() {
    let exec = executor_with(|c| c.output_cap = 8);
    let m = marker();
    let id = bg(&exec, &format!("seq 1 100; sleep 1000.{m}")).await;
    eventually("spilled", || exec.spill_path(id).is_some()).await;
    let path = exec.spill_path(id).unwrap();
    let exit = exec.release(id).await.unwrap();
    assert_eq!(exit.end, EndCause::Killed(KillCause::Requested));
    assert!(alive(&format!("1000.{m}")).is_empty());
    assert!(!path.exists());
    for result in [
        exec.read_output(id, 0, 1).await.map(|_| ()),
        exec.kill(id).await,
        exec.wait(id).await.map(|_| ()),
        exec.release(id).await.map(|_| ()),
    ] {
        assert!(matches!(result, Err(ShellError::UnknownTask(_))));
    }
    exec.dispose().await;
}

/// What the recording listener saw: the event, whether the stream read complete, how many
/// tasks were listed and the owner.
type Seen = (TaskDone, bool, usize, Option<String>);

#[tokio::test]
async fn listeners_run_in_order_contained_and_see_the_final_state() {
    let exec = executor();
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let _panicking = exec.on_task_done(Box::new(|_, _| panic!("listener bug")));
    let record = seen.clone();
    let _recording = exec.on_task_done(Box::new(move |executor, done| {
        // list and owner_of work from inside a listener; no deadlock.
        let listed = executor.list().len();
        let owner = executor.owner_of(done.id);
        let complete = futures_lite(executor, done.id);
        record
            .lock()
            .unwrap()
            .push((done.clone(), complete, listed, owner));
    }));
    let id = bg_owned(&exec, "echo done", Some("a")).await;
    let exit = exec.wait(id).await.unwrap();
    eventually("delivered", || !seen.lock().unwrap().is_empty()).await;
    let (done, complete, listed, owner) = seen.lock().unwrap()[0].clone();
    assert_eq!(done.id, id);
    assert_eq!(done.exit, exit);
    assert!(complete, "the final state is readable when listeners run");
    assert_eq!((listed, owner.as_deref()), (1, Some("a")));
    // Foreground tasks are never announced.
    fg(&exec, "true").await;
    assert_eq!(seen.lock().unwrap().len(), 1);
    exec.dispose().await;
}

/// Whether the task's stream reads as complete, from a listener (which may not block, so the
/// read is driven to completion here: it does not wait for processes).
fn futures_lite(executor: &dyn ShellExecutor, id: TaskId) -> bool {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut read = executor.read_output(id, 0, 1024);
    match read.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(chunk)) => {
            chunk.exit.is_some() && chunk.next == chunk.total && &chunk.bytes[..] == b"done\n"
        }
        _ => false,
    }
}

#[tokio::test]
async fn a_dropped_subscription_gets_nothing_and_nothing_is_replayed() {
    let exec = executor();
    let calls = Arc::new(Mutex::new(0));
    let counter = calls.clone();
    let subscription = exec.on_task_done(Box::new(move |_, _| *counter.lock().unwrap() += 1));
    drop(subscription);
    let id = bg(&exec, "true").await;
    exec.wait(id).await.unwrap();
    let counter = calls.clone();
    let _again = exec.on_task_done(Box::new(move |_, _| *counter.lock().unwrap() += 1));
    assert_eq!(*calls.lock().unwrap(), 0);
    // Tasks ended by disposal are silent.
    bg(&exec, "sleep 1000").await;
    exec.dispose().await;
    assert_eq!(*calls.lock().unwrap(), 0);
}

#[tokio::test]
async fn dispose_ends_every_tree_removes_the_spill_directory_and_is_idempotent() {
    let exec = executor_with(|c| c.output_cap = 8);
    let m = marker();
    bg(&exec, &format!("sleep 1000.{m} & sleep 1000.{m}; wait")).await;
    bg(&exec, &format!("trap '' TERM; sleep 1000.{m} & wait; wait")).await;
    let out = fg(&exec, "seq 1 100").await;
    let spill = exec.spill_path(out.task_id).unwrap();
    let dir = spill.parent().unwrap().to_path_buf();
    eventually("up", || sleepers(&m) >= 3).await;
    let running = exec.list()[0].id;
    let mut pending = exec.wait(running);
    // Polled once, so the wait is registered before disposal begins.
    let waker = std::task::Waker::noop();
    assert!(
        pending
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_pending()
    );
    exec.dispose().await;
    assert!(
        alive(&m).is_empty(),
        "dispose returned with processes alive:\n{}",
        describe(&m)
    );
    assert!(!dir.exists());
    assert!(exec.list().is_empty());
    assert_eq!(exec.owner_of(out.task_id), None);
    assert_eq!(
        pending.await.unwrap().end,
        EndCause::Killed(KillCause::Disposed),
        "a wait pending across disposal resolves"
    );
    let spec = exec
        .resolve(ShellExecRequest::new("true").background(true))
        .unwrap();
    assert!(matches!(exec.start(spec).await, Err(ShellError::Disposed)));
    assert!(matches!(
        exec.read_output(out.task_id, 0, 1).await,
        Err(ShellError::Disposed)
    ));
    exec.dispose().await;
}

#[tokio::test]
async fn kill_all_does_not_wait_out_the_grace() {
    let exec = executor_with(|c| c.term_grace = std::time::Duration::from_secs(60));
    let m = marker();
    let id = bg(&exec, &format!("trap '' TERM; sleep 1000.{m} & wait; wait")).await;
    eventually("up", || sleepers(&m) == 1).await;
    // With a 60 s grace, only an immediate SIGKILL lets this finish within the poll deadline.
    tokio::time::timeout(std::time::Duration::from_secs(10), exec.kill_all())
        .await
        .expect("kill_all skips the grace");
    assert!(alive(&m).is_empty());
    let _ = id;
}

#[tokio::test]
async fn dropping_an_undisposed_executor_kills_its_processes() {
    let exec = executor();
    let m = marker();
    bg(&exec, &format!("sleep 1000.{m}")).await;
    eventually("up", || sleepers(&m) == 1).await;
    drop(exec);
    all_gone(&m).await;
}

#[tokio::test]
async fn a_provider_reload_ends_running_tasks_and_ids_keep_increasing() {
    let runtime = Runtime::new();
    runtime.load(ShellLocalPlugin::new(config())).await.unwrap();
    let exec = runtime.scope().require::<dyn ShellExecutor>().unwrap();
    let m = marker();
    let spec = exec
        .resolve(ShellExecRequest::new(format!("sleep 1000.{m}")).background(true))
        .unwrap();
    let old = exec.start(spec).await.unwrap();
    eventually("up", || sleepers(&m) == 1).await;
    runtime
        .reload(ShellLocalPlugin::new(config()))
        .await
        .unwrap();
    assert!(alive(&m).is_empty());
    let fresh = runtime.scope().require::<dyn ShellExecutor>().unwrap();
    let spec = fresh
        .resolve(ShellExecRequest::new("true").background(true))
        .unwrap();
    assert!(fresh.start(spec).await.unwrap() > old);
    runtime.shutdown().await;
}
