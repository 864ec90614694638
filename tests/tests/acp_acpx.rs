//! A second real ACP client: `acpx` (pinned in `tests/acp-peer`'s lockfile) drives the built
//! `dsh acp` the way its users do — `sessions new`, a prompt, then, once acpx's background
//! owner and its dsh are gone, a prompt that resumes the stored session with `session/resume`.
//! Skipped without node or the package, except under `CI`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use dsh_e2e::{Sandbox, acp_peer_dir, binary, text, wait_gone};
use serde_json::{Value, json};

fn acpx(peer: &Path, sandbox: &Sandbox, marker: &str, agent: &str, args: &[&str]) -> Output {
    Command::new(peer.join("node_modules/.bin/acpx"))
        .args(["--agent", agent])
        .args(args)
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.root.path())
        .env("DSH_ACPX_TEST", marker.split_once('=').unwrap().1)
        .env("DSH_REPLAY_LOG", sandbox.root.path().join("calls.jsonl"))
        .output()
        .unwrap()
}

#[test]
fn acpx_creates_a_session_prompts_and_resumes_it_in_a_new_dsh() {
    let Some(peer) = acp_peer_dir("acpx/package.json") else {
        return;
    };
    let sandbox = Sandbox::new();
    let script = sandbox.script(
        "acpx",
        json!([
            {"match": {"last_user_contains": "first"}, "stream": [{"text": "one"}],
             "finish": "stop"},
            {"match": {"last_user_contains": "second"}, "stream": [{"text": "two"}],
             "finish": "stop"}
        ]),
    );
    let agent = format!(
        "{} --data-dir {} --replay {script} acp --permission allow",
        binary().display(),
        sandbox.data().display()
    );
    let marker = format!("DSH_ACPX_TEST={}", sandbox.root.path().display());
    let run = |args: &[&str]| {
        let out = acpx(&peer, &sandbox, &marker, &agent, args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "acpx {args:?}:\n{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    };

    let created = run(&["sessions", "new"]);
    let id = text(&created.stdout)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert!(id.len() >= 32, "a session id: {id:?}");
    wait_gone(&marker);

    let first = run(&["--ttl", "1", "first"]);
    assert!(
        text(&first.stdout).contains("one"),
        "{}",
        text(&first.stdout)
    );
    wait_gone(&marker);
    assert_eq!(sandbox.logs().len(), 1, "the prompted session is stored");

    let second = run(&["--ttl", "1", "second"]);
    assert!(
        text(&second.stdout).contains("two"),
        "{}",
        text(&second.stdout)
    );
    let said = text(&second.stderr);
    assert!(
        !said.contains("started fresh session"),
        "the stored session was resumed: {said}"
    );
    wait_gone(&marker);
    assert_eq!(sandbox.logs().len(), 1, "the same session went on");

    // The resumed model call held the first exchange: the history came back from the log.
    let calls: Vec<Value> = std::fs::read_to_string(sandbox.root.path().join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = calls.last().unwrap();
    assert_eq!(last["last_user"], "second");
    assert_eq!(last["messages"], 4, "system, first, one, second: {last}");
}
