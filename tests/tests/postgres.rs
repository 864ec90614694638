//! `dsh` with its sessions in PostgreSQL (`DSH_SESSIONS_URL`), as a team runs it: the built
//! binary against a real server, each test in a database of its own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use dsh_test_providers::postgres::{expire_leases, fresh_database};
use serde_json::Value;

/// A clone of one repository at `work/<name>`: a `.git` whose `origin` is the team's.
fn clone(sandbox: &Sandbox, name: &str) -> std::path::PathBuf {
    let dir = sandbox.work().join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(
        dir.join(".git/config"),
        "[remote \"origin\"]\n\turl = git@example.org:team/app.git\n",
    )
    .unwrap();
    dir
}

/// The session line of `dsh run --json` output.
fn session_line(stdout: &[u8]) -> Value {
    text(stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["type"] == "session")
        .unwrap_or_else(|| panic!("no session line in {}", text(stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_kept_in_postgresql_follow_the_project_to_another_clone() {
    let Some(url) = fresh_database().await else {
        return;
    };
    let sandbox = Sandbox::new();
    let (one, two) = (clone(&sandbox, "one"), clone(&sandbox, "two"));
    let run = |dir: &std::path::Path, args: &[&str]| {
        let mut command = sandbox.dsh(args);
        command.current_dir(dir).env("DSH_SESSIONS_URL", &url);
        command.output().unwrap()
    };
    let first = run(&one, &["run", "--json", "--replay", "demo", "look around"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_line(&first.stdout)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        sandbox.logs().is_empty(),
        "no JSONL log: the database has it"
    );
    // Another clone of the same repository lists it, and `-c` continues it there.
    let listed = run(&two, &["sessions", "list"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    assert!(
        text(&listed.stdout).contains(&id[..8]),
        "{}",
        text(&listed.stdout)
    );
    let again = run(&two, &["run", "-c", "--json", "--replay", "demo", "again"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let line = session_line(&again.stdout);
    assert_eq!(line["session_id"], id.as_str());
    assert_eq!(line["resumed"], true);
    // Elsewhere, it is another project's; `--all-projects` shows it.
    let elsewhere = sandbox.work().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let here = run(&elsewhere, &["sessions", "list"]);
    assert!(
        text(&here.stdout).contains("for this project (--all-projects"),
        "{}",
        text(&here.stdout)
    );
    let all = run(&elsewhere, &["sessions", "list", "--all-projects"]);
    assert!(
        text(&all.stdout).contains(&id[..8]),
        "{}",
        text(&all.stdout)
    );
    let shown = run(&elsewhere, &["sessions", "show", &id]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert!(
        text(&shown.stdout).contains("again"),
        "{}",
        text(&shown.stdout)
    );
}

#[test]
fn a_password_stays_out_of_the_configuration_file_and_out_of_dsh_config() {
    let sandbox = Sandbox::new();
    let dir = sandbox.root.path().join("home/.config/dsh");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "sessions_url = \"postgres://ana:s3cret@db.example/team\"\n",
    )
    .unwrap();
    let refused = sandbox.dsh(["config"]).output().unwrap();
    assert_ne!(refused.status.code(), Some(0));
    let said = text(&refused.stderr);
    assert!(
        said.contains("holds a password") && said.contains("PGPASSWORD"),
        "{said}"
    );
    assert!(!said.contains("s3cret"), "{said}");
    std::fs::remove_file(dir.join("config.toml")).unwrap();
    let shown = sandbox
        .dsh(["config", "--json"])
        .env("DSH_SESSIONS_URL", "postgres://ana:s3cret@db.example/team")
        .output()
        .unwrap();
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    let config: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        config["sessions_url"]["value"],
        "postgres://ana@db.example:5432/team"
    );
    assert_eq!(config["sessions_url"]["source"], "env DSH_SESSIONS_URL");
    assert!(!text(&shown.stdout).contains("s3cret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_dsh_is_told_which_host_holds_the_session_until_the_dead_holder_s_lease_ends() {
    use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
    use std::io::{BufRead, BufReader};
    let Some(url) = fresh_database().await else {
        return;
    };
    let sandbox = Sandbox::new();
    let m = marker();
    let hang = sandbox.script(
        "hang",
        serde_json::json!([{"stream": [{"tool_call": {"name": "bash",
            "arguments": {"command": format!("sleep 1000.{m}")}}}]}]),
    );
    let mut holder = sandbox.dsh(["run", "--json", "--replay", &hang, "go"]);
    holder
        .env("DSH_SESSIONS_URL", &url)
        .stdout(std::process::Stdio::piped());
    let mut holder = holder.spawn().unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let id = loop {
        let line: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if line["type"] == "session" {
            break line["session_id"].as_str().unwrap().to_owned();
        }
    };
    eventually("the holder's command runs", || sleepers(&m) == 1).await;
    let second = |prompt: &str| {
        sandbox
            .dsh(["run", "--session", &id, "--replay", "demo", prompt])
            .env("DSH_SESSIONS_URL", &url)
            .output()
            .unwrap()
    };
    let refused = second("me too");
    assert_ne!(refused.status.code(), Some(0));
    let said = text(&refused.stderr);
    assert!(said.contains("open in another dsh process"), "{said}");
    assert!(
        said.contains(&format!("on host {}", dsh_session_postgres_host())),
        "{said}"
    );
    // The holder dies without a word: its lease outlives it, until it expires.
    holder.kill().unwrap();
    holder.wait().unwrap();
    all_gone(&m).await;
    let still = second("now?");
    assert!(
        text(&still.stderr).contains("open in another dsh process"),
        "{}",
        text(&still.stderr)
    );
    expire_leases(&url, "dsh").await;
    let taken = second("take over");
    assert_eq!(taken.status.code(), Some(0), "{}", text(&taken.stderr));
    let shown = sandbox
        .dsh(["sessions", "show", &id])
        .env("DSH_SESSIONS_URL", &url)
        .output()
        .unwrap();
    let transcript = text(&shown.stdout);
    assert!(transcript.contains("interrupted"), "{transcript}");
    assert!(transcript.contains("take over"), "{transcript}");
}

/// This machine's name, as the holder's lease gives it.
fn dsh_session_postgres_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_move_between_the_files_and_postgresql_byte_for_byte() {
    use dsh_e2e::run_with_stdin;
    let (Some(db), Some(bad_db)) = (fresh_database().await, fresh_database().await) else {
        return;
    };
    let files = Sandbox::new();
    for prompt in ["look around", "and again"] {
        let out = files
            .dsh(["run", "--replay", "demo", prompt])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let export = |sandbox: &Sandbox, url: Option<&str>| {
        let mut command = sandbox.dsh(["sessions", "export"]);
        if let Some(url) = url {
            command.env("DSH_SESSIONS_URL", url);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out.stdout
    };
    let import = |sandbox: &Sandbox, url: Option<&str>, bytes: &[u8]| {
        let mut command = sandbox.dsh(["sessions", "import"]);
        if let Some(url) = url {
            command.env("DSH_SESSIONS_URL", url);
        }
        run_with_stdin(command, bytes)
    };
    let from_files = export(&files, None);
    assert_eq!(
        text(&from_files)
            .matches("\"format\":\"dsh-session\"")
            .count(),
        2
    );
    // Into the database and out again: the same bytes.
    let imported = import(&files, Some(&db), &from_files);
    assert_eq!(
        imported.status.code(),
        Some(0),
        "{}",
        text(&imported.stderr)
    );
    assert!(text(&imported.stderr).contains("imported 2 session(s)"));
    let from_db = export(&files, Some(&db));
    assert_eq!(text(&from_db), text(&from_files));
    // Again: already stored, left as they are.
    let twice = import(&files, Some(&db), &from_files);
    assert!(
        text(&twice.stderr).contains("2 already stored"),
        "{}",
        text(&twice.stderr)
    );
    // Into another machine's files, and out again: the same bytes.
    let other = Sandbox::new();
    let landed = import(&other, None, &from_db);
    assert_eq!(landed.status.code(), Some(0), "{}", text(&landed.stderr));
    assert_eq!(text(&export(&other, None)), text(&from_files));
    // A damaged line costs its own session only, and says where it is.
    let mut lines: Vec<String> = text(&from_files).lines().map(str::to_owned).collect();
    let second = lines
        .iter()
        .rposition(|l| l.starts_with("{\"format\":"))
        .unwrap();
    lines[second + 2] = "{\"seq\":1,\"broken".into();
    let damaged = format!("{}\n", lines.join("\n"));
    let partly = import(&other, Some(&bad_db), damaged.as_bytes());
    assert_eq!(partly.status.code(), Some(1), "{}", text(&partly.stderr));
    let said = text(&partly.stderr);
    assert!(said.contains(&format!("stdin:{}:", second + 3)), "{said}");
    assert!(said.contains("imported 1 session(s)"), "{said}");
    let kept = export(&other, Some(&bad_db));
    assert_eq!(text(&kept).matches("\"format\":\"dsh-session\"").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_dsh_processes_racing_to_continue_one_session_exactly_one_wins() {
    use dsh_test_support::processes::{all_gone, eventually, marker, sleepers};
    let Some(url) = fresh_database().await else {
        return;
    };
    let sandbox = Sandbox::new();
    let first = sandbox
        .dsh(["run", "--json", "--replay", "demo", "start"])
        .env("DSH_SESSIONS_URL", &url)
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let id = session_line(&first.stdout)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let m = marker();
    let hang = sandbox.script(
        "hang",
        serde_json::json!([{"stream": [{"tool_call": {"name": "bash",
            "arguments": {"command": format!("sleep 1000.{m}")}}}]}]),
    );
    let racer = || {
        sandbox
            .dsh(["run", "--session", &id, "--replay", &hang, "mine"])
            .env("DSH_SESSIONS_URL", &url)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut racers = [racer(), racer()];
    let mut lost = None;
    eventually("one racer gives up", || {
        for (index, racer) in racers.iter_mut().enumerate() {
            if let Ok(Some(status)) = racer.try_wait() {
                lost = Some((index, status));
                return true;
            }
        }
        false
    })
    .await;
    let (loser, status) = lost.unwrap();
    assert_ne!(status.code(), Some(0));
    let mut said = String::new();
    std::io::Read::read_to_string(racers[loser].stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(said.contains("open in another dsh process"), "{said}");
    eventually("the winner's command runs", || sleepers(&m) == 1).await;
    let winner = &mut racers[1 - loser];
    assert!(winner.try_wait().unwrap().is_none(), "the winner works on");
    winner.kill().unwrap();
    winner.wait().unwrap();
    all_gone(&m).await;
}
