//! Background tasks through the tools: ownership, paging, kill, workdirs, reloads.

use dsh_shell::{ShellExecRequest, TaskState};
use dsh_test_providers::providers::ShellLocalPlugin;
use dsh_tool_bash::BashToolsPlugin;
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn another_agent_gets_the_same_not_found_text_as_for_a_never_issued_id() {
    let rig = Rig::new().await;
    let (a, b) = (rig.caller(None), rig.caller(None));
    let m = marker();
    let id = rig.start(format!("sleep 1000.{m}"), a.cx()).await;
    eventually("up", || sleepers(&m) == 1).await;
    // An id of this run that was never issued.
    let never = format!("{}-999999999", id.rsplit_once('-').unwrap().0);
    for tool in ["bash_output", "bash_kill"] {
        let foreign = err(rig.call(tool, json!({"task_id": id}), b.cx()).await);
        let unknown = err(rig.call(tool, json!({"task_id": &never}), b.cx()).await);
        assert_eq!(foreign.code, "task_not_found");
        assert_eq!(foreign.message, format!("task \"{id}\" not found"));
        assert_eq!(unknown.message, format!("task \"{never}\" not found"));
        let anonymous = err(rig
            .call(tool, json!({"task_id": id}), Rig::anonymous())
            .await);
        assert_eq!(anonymous.message, foreign.message);
        let malformed = err(rig.call(tool, json!({"task_id": "sh-01"}), a.cx()).await);
        assert_eq!(malformed.message, "task \"sh-01\" not found");
        let empty = err(rig.call(tool, json!({"task_id": ""}), a.cx()).await);
        assert_eq!(
            empty.message,
            "invalid task_id: expected a non-empty string"
        );
    }
    assert_eq!(sleepers(&m), 1, "the task keeps running");
    assert!(
        ok(rig
            .call("bash_output", json!({"task_id": id}), a.cx())
            .await)
        .ends_with("[status: running]")
    );
    assert!(
        ok(rig.call("bash_kill", json!({"task_id": id}), a.cx()).await)
            .starts_with(&format!("killed task {id}"))
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn an_empty_owner_matches_no_caller_and_no_owner_matches_every_caller() {
    let rig = Rig::new().await;
    let exec = rig.exec();
    let a = rig.caller(None);
    let empty = exec
        .start(
            exec.resolve(
                ShellExecRequest::new("sleep 1000")
                    .background(true)
                    .owner(""),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let open = exec
        .start(
            exec.resolve(ShellExecRequest::new("echo open").background(true))
                .unwrap(),
        )
        .await
        .unwrap();
    for cx in [a.cx(), Rig::anonymous()] {
        let error = err(rig
            .call("bash_output", json!({"task_id": empty.to_string()}), cx)
            .await);
        assert_eq!(error.message, format!("task \"{empty}\" not found"));
    }
    for cx in [a.cx(), Rig::anonymous()] {
        ok(rig
            .call(
                "bash_output",
                json!({"task_id": open.to_string(), "wait_ms": 5000}),
                cx,
            )
            .await);
    }
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_task_released_between_check_and_read_gives_the_not_found_text() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let id = rig.start("true", a.cx()).await;
    rig.exec().release(id.parse().unwrap()).await.unwrap();
    let error = err(rig
        .call("bash_output", json!({"task_id": id}), a.cx())
        .await);
    assert_eq!(error.message, format!("task \"{id}\" not found"));
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn polling_with_returned_offsets_yields_the_whole_output_once() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let id = rig
        .start(
            "for i in $(seq 1 20); do echo line-$i; sleep 0.05; done",
            a.cx(),
        )
        .await;
    let mut offset = 0u64;
    let mut seen = String::new();
    loop {
        let text = ok(rig
            .call(
                "bash_output",
                json!({"task_id": id, "offset": offset}),
                a.cx(),
            )
            .await);
        let lines: Vec<&str> = text.lines().collect();
        let status = lines[lines.len() - 1];
        let range = lines[lines.len() - 2];
        let body = &lines[..lines.len() - 2];
        if body != ["(no new output)"] {
            for line in body {
                seen.push_str(line);
                seen.push('\n');
            }
        }
        let next: u64 = range
            .split("..")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        offset = next;
        if status != "[status: running]" && !range.contains("more output") {
            break;
        }
        // No pacing: polling as fast as possible is the hardest case for offsets.
        tokio::task::yield_now().await;
    }
    let expected: String = (1..=20).map(|i| format!("line-{i}\n")).collect();
    assert_eq!(seen, expected);
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn waiting_returns_the_final_status_and_an_offset_past_the_end_is_refused() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let id = rig.start("sleep 0.2; echo done", a.cx()).await;
    let text = ok(rig
        .call(
            "bash_output",
            json!({"task_id": id, "wait_ms": 5000}),
            a.cx(),
        )
        .await);
    assert_eq!(text, "done\n[bytes 0..5 of 5]\n[status: exit code: 0]");
    let error = err(rig
        .call("bash_output", json!({"task_id": id, "offset": 6}), a.cx())
        .await);
    assert_eq!(
        error.message,
        "invalid offset: 6 is beyond the end of the output (5 bytes so far)"
    );
    let error = err(rig
        .call(
            "bash_output",
            json!({"task_id": id, "wait_ms": 600001}),
            a.cx(),
        )
        .await);
    assert_eq!(
        error.message,
        "invalid wait_ms: expected an integer between 0 and 600000, got 600001"
    );
    let error = err(rig
        .call("bash_output", json!({"task_id": id, "extra": 1}), a.cx())
        .await);
    assert!(
        error
            .message
            .starts_with("invalid arguments: unknown field `extra`")
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_wait_ends_the_call_cancelled_and_leaves_the_task() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let id = rig.start("sleep 1000", a.cx()).await;
    let cancel = a.cancel.clone();
    let call = rig.call(
        "bash_output",
        json!({"task_id": id, "wait_ms": 60000}),
        a.cx(),
    );
    let (result, ()) = tokio::join!(call, async { cancel.cancel() });
    assert_eq!(err(result).code, "cancelled");
    let listed = rig.exec().list();
    assert!(matches!(listed[0].state, TaskState::Running));
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn kill_answers_with_the_status_and_a_second_kill_says_already_finished() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let id = rig.start("echo before; exec sleep 1000", a.cx()).await;
    eventually("output", || rig.exec().list()[0].output_bytes > 0).await;
    let text = ok(rig.call("bash_kill", json!({"task_id": id}), a.cx()).await);
    assert_eq!(
        text,
        format!("killed task {id}\n[status: killed on request; killed by signal: SIGTERM]")
    );
    let again = rig
        .call("bash_kill", json!({"task_id": id}), a.cx())
        .await
        .unwrap();
    assert!(!again.is_error);
    assert_eq!(
        again.content,
        format!(
            "task {id} had already finished\n[status: killed on request; killed by signal: SIGTERM]"
        )
    );
    let read = ok(rig
        .call("bash_output", json!({"task_id": id}), a.cx())
        .await);
    assert!(read.starts_with("before\n"), "the output stays readable");
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_background_task_outlives_the_turn_s_cancellation() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let m = marker();
    let id = rig.start(format!("sleep 1000.{m}"), a.cx()).await;
    a.cancel.cancel();
    eventually("up", || sleepers(&m) == 1).await;
    let fresh = Caller {
        cancel: dsh_kernel::CancellationToken::new(),
        ..a
    };
    assert!(
        ok(rig
            .call("bash_output", json!({"task_id": id}), fresh.cx())
            .await)
        .ends_with("[status: running]")
    );
    rig.runtime.shutdown().await;
    all_gone(&m).await;
}

#[tokio::test]
async fn workdirs_resolve_against_each_session_and_home() {
    let rig = Rig::new().await;
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    std::fs::create_dir(one.path().join("sub")).unwrap();
    let a = rig.caller(Some(one.path().to_path_buf()));
    let b = rig.caller(Some(two.path().to_path_buf()));
    let pwd = |text: String| text.lines().next().unwrap().to_owned();
    assert_eq!(
        pwd(ok(rig
            .call("bash", json!({"command": "pwd"}), a.cx())
            .await)),
        one.path().to_str().unwrap()
    );
    assert_eq!(
        pwd(ok(rig
            .call("bash", json!({"command": "pwd"}), b.cx())
            .await)),
        two.path().to_str().unwrap()
    );
    assert_eq!(
        pwd(ok(rig
            .call("bash", json!({"command": "pwd", "workdir": "sub"}), a.cx())
            .await)),
        one.path().join("sub").to_str().unwrap()
    );
    let home = std::env::var("HOME").unwrap();
    assert_eq!(
        pwd(ok(rig
            .call("bash", json!({"command": "pwd", "workdir": "~"}), a.cx())
            .await)),
        home
    );
    let expected = std::env::current_dir().unwrap();
    assert_eq!(
        pwd(ok(rig
            .call("bash", json!({"command": "pwd"}), Rig::anonymous())
            .await)),
        expected.to_str().unwrap()
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn the_running_limit_answers_with_its_text_and_leaves_the_others() {
    let rig = Rig::with_shell(dsh_test_providers::providers::LocalShellConfig {
        max_running_tasks: 2,
        ..shell_config()
    })
    .await;
    let a = rig.caller(None);
    for _ in 0..2 {
        ok(rig
            .call(
                "bash",
                json!({"command": "sleep 1000", "run_in_background": true}),
                a.cx(),
            )
            .await);
    }
    let error = err(rig.call("bash", json!({"command": "true"}), a.cx()).await);
    assert_eq!(error.code, "too_many_tasks");
    assert_eq!(
        error.message,
        "too many running tasks (limit 2); stop one with bash_kill or wait for one to finish"
    );
    assert_eq!(rig.exec().list().len(), 2);
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_reload_of_tool_bash_never_makes_a_task_reachable_by_another_session() {
    let rig = Rig::new().await;
    let (a, b) = (rig.caller(None), rig.caller(None));
    let m = marker();
    let id = rig
        .start(format!("sleep 1000.{m}; echo done"), a.cx())
        .await;
    eventually("up", || sleepers(&m) == 1).await;
    let owner = rig.exec().owner_of(id.parse().unwrap());
    rig.runtime
        .reload(BashToolsPlugin::default())
        .await
        .unwrap();
    assert!(matches!(rig.exec().list()[0].state, TaskState::Running));
    assert_eq!(rig.exec().owner_of(id.parse().unwrap()), owner);
    ok(rig
        .call("bash_output", json!({"task_id": id}), a.cx())
        .await);
    let never = format!("{}-999999999", id.rsplit_once('-').unwrap().0);
    let unknown = err(rig
        .call("bash_output", json!({"task_id": &never}), b.cx())
        .await)
    .message;
    let foreign = err(rig
        .call("bash_output", json!({"task_id": id}), b.cx())
        .await)
    .message;
    assert_eq!(foreign, unknown.replace(&never, &id));
    err(rig.call("bash_kill", json!({"task_id": id}), b.cx()).await);
    assert_eq!(sleepers(&m), 1, "B's kill did nothing");
    ok(rig.call("bash_kill", json!({"task_id": id}), a.cx()).await);
    all_gone(&m).await;
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn an_old_tool_instance_after_a_reload_touches_nothing() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let old = rig.tools().get("bash").unwrap();
    rig.runtime
        .reload(BashToolsPlugin::default())
        .await
        .unwrap();
    let error = old
        .call(json!({"command": "true"}), a.cx())
        .await
        .unwrap_err();
    assert_eq!(error.message, "tool-bash is reloading; retry the call");
    assert!(rig.exec().list().is_empty());
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_provider_reload_ends_tasks_and_tools_find_the_new_executor() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let m = marker();
    let id = rig.start(format!("sleep 1000.{m}"), a.cx()).await;
    rig.runtime.unload("shell-local").await.unwrap();
    all_gone(&m).await;
    let error = err(rig.call("bash", json!({"command": "true"}), a.cx()).await);
    assert_eq!(
        (error.code.as_str(), error.message.as_str()),
        ("shell_unavailable", "shell executor is shutting down")
    );
    rig.runtime
        .load(ShellLocalPlugin::new(shell_config()))
        .await
        .unwrap();
    let text = ok(rig
        .call("bash", json!({"command": "echo back"}), a.cx())
        .await);
    assert_eq!(text, "back\n[exit code: 0]");
    let next = rig.start("true", a.cx()).await;
    let number = |id: &str| id.rsplit_once('-').unwrap().1.parse::<u64>().unwrap();
    assert!(number(&next) > number(&id));
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_background_start_for_an_agent_being_disposed_is_refused_and_leaves_nothing() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let cx = a.cx();
    a.scope.dispose().await;
    let error = err(rig
        .call(
            "bash",
            json!({"command": "sleep 1000", "run_in_background": true}),
            cx,
        )
        .await);
    assert_eq!(
        error.message,
        "agent is shutting down; background task not started"
    );
    assert!(rig.exec().list().is_empty());
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_command_sees_no_terminal() {
    let rig = Rig::new().await;
    let text = ok(rig
        .call("bash", json!({"command": "tty"}), rig.caller(None).cx())
        .await);
    assert_eq!(text, "not a tty\n[exit code: 1]");
    rig.runtime.shutdown().await;
}
