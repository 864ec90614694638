//! How `dsh run` ends when it is interrupted: Ctrl-C cancels the turn, a second one quits at
//! once, SIGTERM and SIGHUP quit at once, a closed stdout ends the run — and on every path the
//! log is closed and loads, and no tool process outlives dsh.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dsh_e2e::{Sandbox, text};
use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};

/// A script whose only call runs `command` in bash; a second entry would answer afterwards.
fn script(sandbox: &Sandbox, command: &str) -> String {
    let bash =
        serde_json::json!({"tool_call": {"name": "bash", "arguments": {"command": command}}});
    script_of(sandbox, &[bash])
}

/// A script of these calls, one model answer each, and an answer after them.
fn script_of(sandbox: &Sandbox, calls: &[serde_json::Value]) -> String {
    let path = sandbox.root.path().join("hang.json");
    let mut entries: Vec<serde_json::Value> = calls
        .iter()
        .map(|call| serde_json::json!({"stream": [call]}))
        .collect();
    entries.push(serde_json::json!({"stream": [{"text": "after"}], "finish": "stop"}));
    let script = serde_json::json!({"version": 1, "name": "hang", "entries": entries});
    std::fs::write(&path, script.to_string()).unwrap();
    path.display().to_string()
}

/// A script whose call starts a subagent, which runs `command` in bash.
fn delegating(sandbox: &Sandbox, command: &str) -> String {
    let task = serde_json::json!({"tool_call": {"name": "task",
        "arguments": {"description": "wait", "prompt": "wait for it"}}});
    let bash =
        serde_json::json!({"tool_call": {"name": "bash", "arguments": {"command": command}}});
    script_of(sandbox, &[task, bash])
}

struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: String,
}

impl Running {
    fn start(sandbox: &Sandbox, command: &str) -> Running {
        Running::with_script(sandbox, script(sandbox, command))
    }

    fn with_script(sandbox: &Sandbox, script: String) -> Running {
        let mut child = sandbox
            .dsh(["run", "--replay", &script, "go"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Running {
            child,
            lines,
            seen: String::new(),
        }
    }

    /// Waits (with a generous deadline, never a fixed sleep) for a stderr line holding `needle`.
    fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.seen.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push_str(&line);
                    self.seen.push('\n');
                }
                Err(_) => panic!("no {needle:?} on stderr; saw:\n{}", self.seen),
            }
        }
    }

    fn signal(&self, name: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn wait(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push_str(&line);
            self.seen.push('\n');
        }
        (status.code(), self.seen)
    }
}

fn show_loads(sandbox: &Sandbox) -> String {
    let id = sandbox.first_session_id();
    let out = sandbox.dsh(["sessions", "show", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[tokio::test]
async fn ctrl_c_cancels_the_turn_ends_the_tool_and_exits_130() {
    let sandbox = Sandbox::new();
    let m = marker();
    let mut run = Running::start(&sandbox, &format!("sleep 1000.{m}"));
    run.expect("$ sleep");
    eventually("the tool runs", || sleepers(&m) == 1).await;
    run.signal("INT");
    let (code, stderr) = run.wait();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        stderr.contains("^C cancelling… (Ctrl-C again to quit now)"),
        "{stderr}"
    );
    assert!(stderr.contains("dsh · cancelled"), "{stderr}");
    all_gone(&m).await;
    assert!(show_loads(&sandbox).contains("[aborted]"));
}

#[tokio::test]
async fn a_second_ctrl_c_quits_at_once_even_when_the_tool_ignores_signals() {
    let sandbox = Sandbox::new();
    let m = marker();
    let mut run = Running::start(
        &sandbox,
        &format!("trap '' TERM INT; bash -c 'trap \"\" TERM INT; exec sleep 1000.{m}'"),
    );
    run.expect("$ trap");
    eventually("the tool runs", || sleepers(&m) == 1).await;
    run.signal("INT");
    run.expect("cancelling");
    let asked = Instant::now();
    run.signal("INT");
    let (code, stderr) = run.wait();
    assert_eq!(code, Some(130), "{stderr}");
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "quit took {:?}",
        asked.elapsed()
    );
    all_gone(&m).await;
    show_loads(&sandbox);
}

#[tokio::test]
async fn sigterm_and_sighup_quit_with_their_statuses_and_the_log_loads() {
    for (signal, status) in [("TERM", 143), ("HUP", 129)] {
        let sandbox = Sandbox::new();
        let m = marker();
        let mut run = Running::start(&sandbox, &format!("sleep 1000.{m}"));
        run.expect("$ sleep");
        eventually("the tool runs", || sleepers(&m) == 1).await;
        run.signal(signal);
        let (code, stderr) = run.wait();
        assert_eq!(code, Some(status), "{signal}: {stderr}");
        all_gone(&m).await;
        show_loads(&sandbox);
    }
}

#[tokio::test]
async fn a_closed_stdout_ends_the_run_with_141_without_a_panic() {
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .dsh(["run", "--replay", "demo", "look"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    show_loads(&sandbox);
}

#[tokio::test]
async fn a_completed_run_leaves_no_background_task_behind() {
    let sandbox = Sandbox::new();
    let m = marker();
    let script = sandbox.script(
        "background",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash", "arguments": {
                "command": format!("sleep 1000.{m} & sleep 1000.{m}; wait"),
                "run_in_background": true}}}]},
            {"stream": [{"text": "started"}], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh(["run", "--replay", &script, "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "started");
    all_gone(&m).await;
}

#[tokio::test]
async fn after_a_sigkill_no_tool_survives_and_the_session_shows_the_turn_interrupted_and_resumes() {
    let sandbox = Sandbox::new();
    let m = marker();
    let mut run = Running::start(&sandbox, &format!("setsid sleep 1000.{m} & sleep 1000.{m}"));
    run.expect("$ setsid");
    eventually("the tool and its setsid child run", || sleepers(&m) == 2).await;
    run.signal("KILL");
    let (code, _) = run.wait();
    assert_eq!(code, None, "killed by a signal");
    // Nothing ran dsh's shutdown: its watchdog ends the tool, the escaped child too.
    all_gone(&m).await;

    let shown = show_loads(&sandbox);
    assert!(shown.contains("$ setsid sleep 1000."), "{shown}");
    assert!(shown.contains("[interrupted]"), "{shown}");

    let id = sandbox.first_session_id();
    let answer = sandbox.script(
        "answer",
        serde_json::json!([{"stream": [{"text": "back again"}], "finish": "stop"}]),
    );
    let out = sandbox
        .dsh(["run", "--session", &id, "--replay", &answer, "again"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "back again");
    let shown = show_loads(&sandbox);
    let interrupted = shown
        .find("[interrupted]")
        .expect("the first turn is still marked");
    let answered = shown.find("back again").expect("the second turn is shown");
    assert!(interrupted < answered, "{shown}");
    assert_eq!(sandbox.logs().len(), 1, "resumed in the same log");
}

/// Every stored log, as text.
fn logs(sandbox: &Sandbox) -> Vec<String> {
    sandbox
        .logs()
        .iter()
        .map(|log| std::fs::read_to_string(log).unwrap())
        .collect()
}

#[tokio::test]
async fn ctrl_c_mid_task_cancels_the_subagent_first_and_leaves_nothing_running() {
    let sandbox = Sandbox::new();
    let m = marker();
    let mut run = Running::with_script(&sandbox, delegating(&sandbox, &format!("sleep 1000.{m}")));
    run.expect("↳ wait · $ sleep");
    eventually("the subagent's command runs", || sleepers(&m) == 1).await;
    run.signal("INT");
    let (code, stderr) = run.wait();
    assert_eq!(code, Some(130), "{stderr}");
    all_gone(&m).await;
    // Both sessions ended their turn: the child's with cause `parent`, before its parent's.
    let logs = logs(&sandbox);
    assert_eq!(logs.len(), 2);
    for log in &logs {
        assert!(log.contains("\"type\":\"turn/end\""), "{log}");
    }
    let child = logs
        .iter()
        .find(|l| l.contains("\"cause\":\"parent\""))
        .unwrap();
    assert!(child.contains("\"aborted\""), "{child}");
}

#[tokio::test]
async fn after_a_sigkill_mid_task_no_subagent_command_survives() {
    let sandbox = Sandbox::new();
    let m = marker();
    let mut run = Running::with_script(&sandbox, delegating(&sandbox, &format!("sleep 1000.{m}")));
    run.expect("↳ wait · $ sleep");
    eventually("the subagent's command runs", || sleepers(&m) == 1).await;
    run.signal("KILL");
    let (code, _) = run.wait();
    assert_eq!(code, None, "killed by a signal");
    // Nothing ran dsh's shutdown: the watchdog ends the child's command too.
    all_gone(&m).await;
    // Both sessions load, each turn shown interrupted.
    let listed = sandbox
        .dsh(["sessions", "list", "--all", "--json"])
        .output()
        .unwrap();
    let listed = text(&listed.stdout);
    let ids: Vec<String> = listed
        .lines()
        .map(|line| {
            let session: serde_json::Value = serde_json::from_str(line).unwrap();
            session["session_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    for id in &ids {
        let out = sandbox.dsh(["sessions", "show", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains("[interrupted]"),
            "{}",
            text(&out.stdout)
        );
    }
    // Resuming the parent ends the child's turn in its own log and tells the model.
    let top = sandbox
        .dsh(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let top: serde_json::Value = serde_json::from_slice(&top.stdout).unwrap();
    let parent = top["session_id"].as_str().unwrap().to_owned();
    let child = ids.iter().find(|id| **id != parent).unwrap().clone();
    let answer = sandbox.script(
        "answer",
        serde_json::json!([{"stream": [{"text": "noted"}], "finish": "stop"}]),
    );
    let calls = sandbox.root.path().join("calls.jsonl");
    let out = sandbox
        .dsh(["run", "--session", &parent, "--replay", &answer, "again"])
        .env("DSH_REPLAY_LOG", &calls)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let child_log = logs(&sandbox)
        .into_iter()
        .find(|log| log.contains("\"parent_call\""))
        .unwrap();
    assert!(child_log.contains("\"interrupted\""), "{child_log}");
    let asked = std::fs::read_to_string(&calls).unwrap();
    assert!(
        asked.contains("dsh stopped while subagents were working"),
        "{asked}"
    );
    assert!(asked.contains(&child), "{asked}");
}
