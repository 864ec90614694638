//! `dsh sessions` over logs written by real `dsh run`s: listing, rendering, removal, and never
//! a write to a log that is only being read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};

fn demo(sandbox: &Sandbox) -> String {
    let out = sandbox
        .dsh(["run", "--replay", "demo", "look around"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let logs = sandbox.logs();
    logs.iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .max()
        .unwrap()
}

#[test]
fn an_empty_store_says_so_and_creates_nothing() {
    let sandbox = Sandbox::new();
    let out = sandbox.dsh(["sessions", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("no sessions in "));
    assert!(!sandbox.data().exists());
}

#[test]
fn list_shows_each_session_by_a_short_unique_prefix_newest_first() {
    let sandbox = Sandbox::new();
    let first = demo(&sandbox);
    let second = demo(&sandbox);
    let out = sandbox.dsh(["sessions", "list"]).output().unwrap();
    let listing = text(&out.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert!(lines[0].starts_with("ID "), "{listing}");
    assert_eq!(lines.len(), 3, "{listing}");
    let shown: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(
        second.starts_with(shown[0]) && first.starts_with(shown[1]),
        "{listing}"
    );
    assert!(shown.iter().all(|p| p.len() >= 8));
    let cwd = sandbox.work().canonicalize().unwrap();
    assert!(lines[1].ends_with(&cwd.display().to_string()), "{listing}");
    let json = sandbox
        .dsh(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let rows: Vec<serde_json::Value> = text(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["session_id"], second.as_str());
}

#[test]
fn show_renders_the_transcript_with_the_run_renderer_and_never_writes() {
    let sandbox = Sandbox::new();
    let id = demo(&sandbox);
    // A torn tail, as a crash leaves it: show repairs in memory only.
    let log = sandbox.logs().remove(0);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"seq\":99,\"type\":\"turn/st");
    std::fs::write(&log, &bytes).unwrap();
    let out = sandbox
        .dsh(["sessions", "show", &id[..8], "--color", "never"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.starts_with(&format!("session {id} · ")), "{shown}");
    assert!(shown.contains("REPLAY"), "{shown}");
    assert!(shown.contains("› look around\n"), "{shown}");
    assert!(
        shown.contains("$ pwd && ls -la  # Show the working directory and its entries\n"),
        "{shown}"
    );
    assert!(shown.contains("[exit 0 · "), "{shown}");
    assert!(shown.trim_end().ends_with("[completed]"), "{shown}");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        bytes,
        "the log is byte-identical"
    );
}

#[test]
fn unknown_and_ambiguous_ids_exit_1_with_a_hint() {
    let sandbox = Sandbox::new();
    demo(&sandbox);
    let out = sandbox
        .dsh(["sessions", "show", "ffffffff"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no session 'ffffffff'"));
    assert!(text(&out.stderr).contains("dsh sessions list"));
}

#[test]
fn rm_deletes_through_the_store() {
    let sandbox = Sandbox::new();
    let id = demo(&sandbox);
    let out = sandbox.dsh(["sessions", "rm", &id]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("removed {id}\n"));
    assert!(sandbox.logs().is_empty());
}

#[test]
fn list_names_each_session_by_title_turns_and_model_and_hides_unanswered_ones() {
    let sandbox = Sandbox::new();
    let answered = demo(&sandbox);
    // A run whose model call fails: a session in which no model ever answered.
    let script = sandbox.script(
        "broken",
        serde_json::json!([{"error": {"kind": "server", "message": "down"}}]),
    );
    let out = sandbox
        .dsh(["run", "--replay", &script, "never answered\nsecond line"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let listing = text(&sandbox.dsh(["sessions", "list"]).output().unwrap().stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert!(
        lines[0].contains("TURNS") && lines[0].contains("MODEL") && lines[0].contains("TITLE"),
        "{listing}"
    );
    assert_eq!(lines.len(), 3, "one session and the hidden note: {listing}");
    assert!(answered.starts_with(lines[1].split_whitespace().next().unwrap()));
    assert!(
        lines[1].contains("replay:demo") && lines[1].contains("look around"),
        "{listing}"
    );
    assert!(
        lines[2].contains("1 more where no model answered: --all shows them"),
        "{listing}"
    );
    let all = text(
        &sandbox
            .dsh(["sessions", "list", "--all"])
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(all.lines().count(), 3, "both sessions: {all}");
    assert!(
        all.contains("never answered"),
        "the title is the first line: {all}"
    );
    assert!(!all.contains("second line"), "{all}");
    let json = text(
        &sandbox
            .dsh(["sessions", "list", "--json", "--all"])
            .output()
            .unwrap()
            .stdout,
    );
    let rows: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows[0]["title"], "never answered");
    assert_eq!(rows[0]["answered"], false);
    assert_eq!(rows[1]["turns"], 1);
    assert_eq!(rows[1]["model"], "replay:demo");
}

#[test]
fn rename_titles_a_stored_session_everywhere_it_is_listed() {
    let sandbox = Sandbox::new();
    let id = demo(&sandbox);
    let out = sandbox
        .dsh(["sessions", "rename", &id[..12], "Tidy the parser\nignored"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("renamed {id}: Tidy the parser\n")
    );
    let json = text(
        &sandbox
            .dsh(["sessions", "list", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let line: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(line["title"], "Tidy the parser", "{json}");
    // The rename is a durable event of the log: it shows, and the session still resumes.
    let events = text(
        &sandbox
            .dsh(["sessions", "show", &id, "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let titles: Vec<serde_json::Value> = events
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "session/title")
        .collect();
    assert_eq!(
        titles.len(),
        2,
        "the first prompt's, then the rename: {events}"
    );
    assert_eq!(titles[0]["data"]["title"], "look around");
    assert_eq!(titles[1]["data"]["source"], "rename");
    let plain = sandbox.script(
        "plain",
        serde_json::json!([{"stream": [{"text": "ok"}], "finish": "stop"}]),
    );
    let again = sandbox
        .dsh(["run", "--replay", &plain, "-c", "and again"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    let listing = text(&sandbox.dsh(["sessions", "list"]).output().unwrap().stdout);
    assert!(
        listing.contains("Tidy the parser"),
        "a later prompt renames nothing: {listing}"
    );

    let empty = sandbox
        .dsh(["sessions", "rename", &id, " \n "])
        .output()
        .unwrap();
    assert_eq!(empty.status.code(), Some(2), "{}", text(&empty.stderr));
    assert!(text(&empty.stderr).contains("the title holds no text"));
}

#[test]
fn a_subagent_s_session_is_listed_only_with_all() {
    let sandbox = Sandbox::new();
    let parent = demo(&sandbox);
    // A child's log: the parent's, under a new id, its header naming parent and call.
    let log = &sandbox.logs()[0];
    let stored = std::fs::read_to_string(log).unwrap();
    let (header, events) = stored.split_once('\n').unwrap();
    let mut header: serde_json::Value = serde_json::from_str(header).unwrap();
    let child = "01a24e00-0000-7000-8000-000000000001";
    header["id"] = child.into();
    header["parent"] = parent.as_str().into();
    header["parent_call"] = "call_0_0".into();
    std::fs::write(
        log.with_file_name(format!("{child}.jsonl")),
        format!("{header}\n{events}"),
    )
    .unwrap();
    let listing = text(&sandbox.dsh(["sessions", "list"]).output().unwrap().stdout);
    assert!(!listing.contains(&child[..8]), "{listing}");
    assert!(
        listing.contains("(1 more of a subagent: --all shows them)"),
        "{listing}"
    );
    let all = text(
        &sandbox
            .dsh(["sessions", "list", "--all", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let lines: Vec<serde_json::Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{all}");
    let listed_child = lines.iter().find(|l| l["session_id"] == child).unwrap();
    assert_eq!(listed_child["parent"], parent.as_str());
}
