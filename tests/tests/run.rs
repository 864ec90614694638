//! `dsh run` driven as a user drives it: the built binary, real bash, real files, and a real
//! HTTP model server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;

use dsh_e2e::{Sandbox, run_with_stdin, text};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};

const DEMO_PROMPT: &str = "Take a quick look at this directory and tell me what you find.";

#[test]
fn version_names_the_release_and_the_build() {
    let out = Sandbox::new().dsh(["--version"]).output().unwrap();
    assert!(out.status.success());
    let line = text(&out.stdout);
    assert!(line.starts_with("dsh 0.1.0 ("), "{line}");
}

#[test]
fn the_demo_runs_real_bash_through_the_whole_stack_and_stores_the_session() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("marker-file.txt"), "x").unwrap();
    let out = sandbox
        .dsh(["run", "--replay", "demo", DEMO_PROMPT])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Piped stdout carries only the answer; the tool lines go to stderr.
    assert!(stdout.contains("I'll take a look around."), "{stdout}");
    assert!(stdout.contains("scripted"), "{stdout}");
    assert!(!stdout.contains("$ pwd"), "{stdout}");
    assert!(stderr.contains("$ pwd && ls -la"), "{stderr}");
    assert!(
        stderr.contains("marker-file.txt"),
        "the listing is real: {stderr}"
    );
    assert!(stderr.contains("entries: 1"), "{stderr}");
    assert!(stderr.contains("[exit 0 · "), "{stderr}");
    assert!(
        stderr.contains("REPLAY 'demo' — scripted offline model, not a real LLM"),
        "{stderr}"
    );
    assert!(stderr.contains("dsh · completed · 5 steps"), "{stderr}");
    // The file tools ran on the demo's scratch file, which it removed again.
    assert!(
        stderr.contains("     3 - status: draft\n     3 + status: reviewed by dsh\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("status: reviewed by dsh\nowner: nobody\n[exit 0"),
        "{stderr}"
    );
    assert!(!sandbox.work().join(".dsh-demo").exists());
    let logs = sandbox.logs();
    assert_eq!(logs.len(), 1, "one session stored");
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(log.contains("\"type\":\"turn/end\""));
    assert!(log.contains("marker-file.txt"), "the tool output is stored");
}

#[test]
fn a_debug_log_shows_the_structure_of_a_turn() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh(["run", "--replay", "demo", DEMO_PROMPT])
        .env("DSH_LOG", "dsh_agent_loop=debug")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    let id = sandbox.first_session_id();
    // Each line names its place: the turn (with the session), the step, the call.
    let loop_lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("dsh_agent_loop"))
        .collect();
    let says = |line: &str, span: &str, event: &str| line.contains(span) && line.contains(event);
    let turn = format!("turn{{session={id} turn=1}}");
    let expected: Vec<(String, &str)> = vec![
        (turn.clone(), "turn started"),
        (
            format!("{turn}:step{{step=1}}:model_call{{model=replay:demo"),
            "model call ended",
        ),
        (
            format!("{turn}:step{{step=1}}:tool_call{{tool=bash"),
            "tool call ended",
        ),
        (format!("{turn}:step{{step=1}}:"), "step ended"),
        (
            format!("{turn}:step{{step=2}}:model_call"),
            "model call ended",
        ),
        (
            format!("{turn}:step{{step=2}}:tool_call"),
            "tool call ended",
        ),
        (format!("{turn}:step{{step=2}}:"), "step ended"),
        (
            format!("{turn}:step{{step=3}}:model_call"),
            "model call ended",
        ),
        (
            format!("{turn}:step{{step=3}}:tool_call{{tool=read"),
            "tool call ended",
        ),
        (
            format!("{turn}:step{{step=3}}:tool_call{{tool=edit"),
            "tool call ended",
        ),
        (format!("{turn}:step{{step=3}}:"), "step ended"),
        (
            format!("{turn}:step{{step=4}}:model_call"),
            "model call ended",
        ),
        (
            format!("{turn}:step{{step=4}}:tool_call{{tool=bash"),
            "tool call ended",
        ),
        (format!("{turn}:step{{step=4}}:"), "step ended"),
        (
            format!("{turn}:step{{step=5}}:model_call"),
            "model call ended",
        ),
        (format!("{turn}:step{{step=5}}:"), "step ended"),
        (turn.clone(), "turn ended"),
    ];
    assert_eq!(loop_lines.len(), expected.len(), "{stderr}");
    for (line, (span, event)) in loop_lines.iter().zip(&expected) {
        assert!(says(line, span, event), "{line:?} is not {span} {event}");
        assert!(
            line.contains("elapsed_ms=") || *event == "turn started",
            "{line}"
        );
    }
    let last = loop_lines.last().unwrap();
    assert!(last.contains("reason=\"completed\""), "{last}");
}

#[test]
fn json_mode_prints_one_object_per_line_from_session_to_turn_end() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh(["run", "--json", "--replay", "demo", DEMO_PROMPT])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["schema_version"], 1);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "turn_end");
    assert_eq!(last["reason"], "completed");
    assert_eq!(last["steps"], 5);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    for kind in [
        "turn_start",
        "reasoning",
        "text",
        "tool_call",
        "tool_result",
        "message",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let result = lines.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["is_error"], false);
}

#[test]
fn a_missing_key_explains_what_to_do_and_creates_nothing() {
    let sandbox = Sandbox::new();
    let out = sandbox.dsh(["run", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(6));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr,
        "error: no API key for https://api.deepseek.com (model deepseek-flash)\n  \
         dsh reads the key from the environment variable DEEPSEEK_API_KEY, which is not set.\n  \
         Set it for this shell:  export DEEPSEEK_API_KEY=<your key>\n  \
         Get a key at https://platform.deepseek.com/api_keys\n  \
         Or run the offline demo, which needs no key:  dsh run --replay demo\n"
    );
    assert!(!sandbox.data().exists(), "nothing created");
}

#[test]
fn a_deepseek_key_is_never_offered_to_another_host() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh([
            "run",
            "--base-url",
            "https://models.example.com/v1",
            "hello",
        ])
        .env("DEEPSEEK_API_KEY", "sk-deepseek")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("DSH_API_KEY, which is not set"), "{stderr}");
    assert!(!stderr.contains("platform.deepseek.com"), "{stderr}");
}

#[test]
fn bad_prompts_are_usage_errors_and_create_nothing() {
    let sandbox = Sandbox::new();
    let demo = ["run", "--replay", "demo"];
    let cases: Vec<(Vec<&str>, Vec<u8>, &str)> = vec![
        (vec!["   "], Vec::new(), "empty"),
        (vec!["-"], Vec::new(), "empty"),
        (vec!["-"], b"bad \xff byte".to_vec(), "not UTF-8"),
        (vec!["-"], vec![b'a'; 1024 * 1024 + 1], "longer than"),
    ];
    for (extra, stdin, says) in cases {
        let mut command = sandbox.dsh(demo.iter().copied().chain(extra.iter().copied()));
        command.stdin(Stdio::piped());
        let out = run_with_stdin(command, &stdin);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{extra:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{extra:?}: {}",
            text(&out.stderr)
        );
    }
    assert!(!sandbox.data().exists(), "nothing created");
}

#[test]
fn stdin_and_a_prompt_are_sent_together() {
    let sandbox = Sandbox::new();
    let log = sandbox.root.path().join("calls.jsonl");
    let mut command = sandbox.dsh(["run", "--replay", "demo", "review this"]);
    command.env("DSH_REPLAY_LOG", &log);
    let out = run_with_stdin(command, b"diff --git a b\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(
        stored.contains("review this\\n\\ndiff --git a b"),
        "{stored}"
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("review this\\n\\ndiff --git a b"), "{calls}");
}

#[test]
fn an_unknown_replay_script_is_a_configuration_error() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh(["run", "--replay", "nosuch", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(
        text(&out.stderr).contains("no replay script 'nosuch' (not a file; built-ins: demo)"),
        "{}",
        text(&out.stderr)
    );
    assert!(!sandbox.data().exists());
}

#[test]
fn a_resumed_session_gets_a_second_turn_in_the_same_log() {
    let sandbox = Sandbox::new();
    let first = sandbox
        .dsh(["run", "--replay", "demo", DEMO_PROMPT])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0));
    let log = sandbox.logs().remove(0);
    let id = log.file_stem().unwrap().to_string_lossy().into_owned();
    let second = sandbox
        .dsh(["run", "--replay", "demo", "--session", &id, "again"])
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert!(text(&second.stderr).contains("(resumed)"));
    let stored = std::fs::read_to_string(&log).unwrap();
    assert_eq!(stored.matches("\"type\":\"turn/end\"").count(), 2);
    assert_eq!(sandbox.logs().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_server_on_loopback_answers_without_a_key() {
    let server = MockModelServer::start(vec![MockResponse::sse_fixture("text_basic")]).await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.dsh([
        "run",
        "--base-url",
        &format!("{}/v1", server.base_url()),
        "--model",
        "local-model",
        "hi",
    ]);
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello, world!\n");
    assert!(text(&out.stderr).contains("local-model @ 127.0.0.1"));
    let request = &server.requests()[0];
    assert_eq!(request.json()["model"], "local-model");
    assert!(request.header("authorization").is_none());
    server.verify();
}

#[test]
fn continue_resumes_the_newest_session_of_this_directory_and_a_prefix_names_one() {
    let sandbox = Sandbox::new();
    let none = sandbox
        .dsh(["run", "-c", "--replay", "demo", "again"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(
        text(&none.stderr).contains("no session was started in"),
        "{}",
        text(&none.stderr)
    );
    assert!(sandbox.logs().is_empty());
    let first = sandbox
        .dsh(["run", "--replay", "demo", DEMO_PROMPT])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0));
    let log = sandbox.logs().remove(0);
    let id = log.file_stem().unwrap().to_string_lossy().into_owned();
    let resumed = sandbox
        .dsh(["run", "-c", "--replay", "demo", "again"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let banner = text(&resumed.stderr);
    assert!(
        banner.contains(&format!("session {id} (resumed)")),
        "{banner}"
    );
    assert!(banner.contains("tools run without asking"), "{banner}");
    let by_prefix = sandbox
        .dsh(["run", "--session", &id[..8], "--replay", "demo", "third"])
        .output()
        .unwrap();
    assert_eq!(
        by_prefix.status.code(),
        Some(0),
        "{}",
        text(&by_prefix.stderr)
    );
    let stored = std::fs::read_to_string(&log).unwrap();
    assert_eq!(stored.matches("\"type\":\"turn/end\"").count(), 3);
}

#[test]
fn permission_ask_without_a_terminal_denies_every_call() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "touch",
        serde_json::json!([
            {"stream": [{"tool_call": {"name": "bash",
                "arguments": {"command": "touch made.txt"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let out = sandbox
        .dsh_without_terminal(["run", "--permission", "ask", "--replay", &script, "go"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!sandbox.work().join("made.txt").exists(), "{stderr}");
    assert!(
        stderr.contains("there is no terminal to ask on"),
        "{stderr}"
    );
    assert_eq!(stdout.trim(), "done");
}

#[test]
fn a_malformed_replay_script_is_refused_with_its_reason_and_nothing_is_created() {
    let sandbox = Sandbox::new();
    let cases: [(&str, &[u8]); 4] = [
        ("truncated.json", b"{\"version\": 1, \"entries\": ["),
        (
            "future.json",
            b"{\"version\": 99, \"name\": \"x\", \"entries\": []}",
        ),
        ("binary.json", b"\xff\xfe\x00garbage"),
        (
            "wrong.json",
            b"{\"version\": 1, \"name\": \"x\", \"entries\": [{\"stream\": 3}]}",
        ),
    ];
    for (name, bytes) in cases {
        let path = sandbox.root.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = sandbox
            .dsh(["run", "--replay", path.to_str().unwrap(), "hi"])
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(6), "{name}: {stderr}");
        assert!(
            stderr.contains(name),
            "{name}: the error names the file: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        assert!(!sandbox.data().exists(), "{name}: nothing is created");
    }
    let out = sandbox
        .dsh([
            "run",
            "--replay",
            sandbox.root.path().to_str().unwrap(),
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    assert!(!sandbox.data().exists());
}

/// Task ids name the process that started the task: a resumed session that asks for a task
/// of an earlier run is told so, and never gets a task of this run that has the same number.
#[test]
fn a_task_of_an_earlier_run_is_named_as_such_and_never_confused_with_one_of_this_run() {
    let sandbox = Sandbox::new();
    let background = |command: &str| {
        serde_json::json!({"stream": [{"tool_call": {"name": "bash", "arguments":
            {"command": command, "run_in_background": true}}}]})
    };
    let first = sandbox.script(
        "first",
        serde_json::json!([background("echo first-run"), {"stream": [{"text": "ok"}], "finish": "stop"}]),
    );
    let out = sandbox
        .dsh(["run", "--replay", &first, "start"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let log = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    let earlier = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|e| e["data"]["meta"]["task_id"].as_str().map(str::to_owned))
        .unwrap();
    let read = |id: &str| {
        serde_json::json!({"stream": [{"tool_call": {"name": "bash_output", "arguments":
            {"task_id": id, "wait_ms": 2000}}}]})
    };
    let second = sandbox.script(
        "second",
        serde_json::json!([
            background("echo second-run"),
            read(&earlier),
            read("sh-1"),
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let id = sandbox.first_session_id();
    let out = sandbox
        .dsh([
            "run",
            "--json",
            "--session",
            &id,
            "--replay",
            &second,
            "read it",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    let this_run = results[0]["output"].as_str().unwrap();
    assert!(
        this_run.starts_with("started background task sh-"),
        "{this_run}"
    );
    assert_ne!(
        this_run.trim_start_matches("started background task "),
        earlier,
        "a new run names its tasks anew"
    );
    for (result, asked) in results[1..].iter().zip([earlier.as_str(), "sh-1"]) {
        assert_eq!(result["is_error"], true, "{result}");
        assert_eq!(result["error_code"], "task_from_earlier_run", "{result}");
        let said = result["output"].as_str().unwrap();
        assert!(
            said.contains(&format!(
                "task \"{asked}\" belonged to an earlier run of dsh"
            )),
            "{said}"
        );
        assert!(
            !said.contains("second-run"),
            "never this run's task: {said}"
        );
    }
}
