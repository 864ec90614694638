//! Golden transcripts: what every front end prints for a fixed corpus of stored sessions
//! (`tests/corpus`, made by its `make.sh`) and for one scripted live turn, byte for byte.
//!
//! They exist so that moving the renderers (into the shared turn view) is seen to change
//! nothing a person or a client sees: `dsh sessions show` in plain text and in colour,
//! `session/load` over ACP with and without Zed's terminal cards, and a live `dsh run`
//! (human and `--json`) and ACP prompt. A change to any of them is a change to review.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use dsh_e2e::acp::AcpDriver;
use dsh_e2e::{Sandbox, text};
use serde_json::{Value, json};

/// The stored sessions, each a whole log as `dsh` wrote it.
const CORPUS: [&str; 6] = ["demo", "plan", "failed", "cancelled", "compaction", "mcp"];

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(format!("{name}.jsonl"))
}

/// Puts a corpus log in the sandbox's store, moved to the sandbox's working directory (a
/// session is loaded in its own); returns its session id.
fn store(sandbox: &Sandbox, name: &str) -> String {
    let log = std::fs::read_to_string(corpus(name))
        .unwrap()
        .replace("/home/user/project", &sandbox.work().display().to_string());
    let header: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let id = header["id"].as_str().unwrap().to_owned();
    let dir = sandbox.data().join("sessions").join("corpus");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.jsonl")), log).unwrap();
    id
}

/// What varies from run to run and machine to machine, replaced by a name.
fn filters(sandbox: &Sandbox) -> Vec<(String, String)> {
    vec![
        (
            regex_lite(&sandbox.work().display().to_string()),
            "[work]".into(),
        ),
        (
            regex_lite(&sandbox.root.path().display().to_string()),
            "[root]".into(),
        ),
        (
            r"\[root\]/data/sessions/[^/]+/".into(),
            "[root]/data/sessions/[project]/".into(),
        ),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".into(),
            "[id]".into(),
        ),
        (r"\d+\.\d s\]".into(), "[seconds] s]".into()),
        (
            r"context ~\d+(\.\d+)?k/".into(),
            "context ~[tokens]/".into(),
        ),
        (r#""used": \d+"#.into(), r#""used": [tokens]"#.into()),
        (
            r#""context_used":\d+"#.into(),
            r#""context_used":[tokens]"#.into(),
        ),
    ]
}

/// `text` with every character a regex gives meaning to escaped.
fn regex_lite(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn snapshot(sandbox: &Sandbox, name: &str, shown: &str) {
    let filters = filters(sandbox);
    let filters: Vec<(&str, &str)> = filters
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    insta::with_settings!({filters => filters, prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(name, shown);
    });
}

fn show(sandbox: &Sandbox, id: &str, colour: &str) -> String {
    let out = sandbox
        .dsh(["sessions", "show", "--color", colour, id])
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    format!("{}--- stderr\n{}", text(&out.stdout), text(&out.stderr))
}

#[test]
fn stored_sessions_read_the_same_in_the_terminal() {
    for name in CORPUS {
        let sandbox = Sandbox::new();
        let id = store(&sandbox, name);
        snapshot(
            &sandbox,
            &format!("{name}_plain"),
            &show(&sandbox, &id, "never"),
        );
        snapshot(
            &sandbox,
            &format!("{name}_colour"),
            &show(&sandbox, &id, "always"),
        );
    }
}

/// `value` with every object's keys in order: how the JSON library keeps them depends on
/// the features one build of it has.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&map[k])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The updates of one request, pretty, one per block.
fn pretty(updates: &[Value]) -> String {
    updates
        .iter()
        .map(|u| serde_json::to_string_pretty(&sorted(u)).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A running call's output arrives in as many pieces as the pipe gave: consecutive pieces of
/// one call are joined (a card's appended data) or the last kept (a text call's content,
/// which each update replaces), so the golden does not depend on how reads fell.
fn joined(updates: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for update in updates {
        let piece = update["sessionUpdate"] == "tool_call_update" && update.get("status").is_none();
        if piece
            && let Some(last) = out.last_mut()
            && last["sessionUpdate"] == "tool_call_update"
            && last.get("status").is_none()
            && last["toolCallId"] == update["toolCallId"]
        {
            match update["_meta"]["terminal_output"]["data"].as_str() {
                Some(data) => {
                    let before = last["_meta"]["terminal_output"]["data"]
                        .as_str()
                        .unwrap_or("");
                    last["_meta"]["terminal_output"]["data"] = json!(format!("{before}{data}"));
                }
                None => *last = update,
            }
            continue;
        }
        out.push(update);
    }
    out
}

fn session_updates(frames: Vec<Value>) -> Vec<Value> {
    frames
        .into_iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .collect()
}

#[test]
fn stored_sessions_load_the_same_over_acp() {
    for name in CORPUS {
        for (cards, mode) in [(true, "cards"), (false, "text")] {
            let sandbox = Sandbox::new();
            let id = store(&sandbox, name);
            let mut acp = AcpDriver::start(&sandbox, "demo", &[]);
            acp.initialize(cards);
            let request = acp.request(
                "session/load",
                json!({"sessionId": id, "cwd": sandbox.work(), "mcpServers": []}),
            );
            let (response, before) = acp.response(&request);
            assert!(response.get("result").is_some(), "{response}");
            acp.finish();
            snapshot(
                &sandbox,
                &format!("{name}_load_{mode}"),
                &pretty(&session_updates(before)),
            );
        }
    }
}

/// One turn touching every kind of card: reasoning and text, commands that pass and fail,
/// a read, a file created and one edited, the plan, a tool that does not exist. Argument
/// keys are in order, so the text the model "sent" is the same however a build of the JSON
/// library keeps keys.
fn live_script(sandbox: &Sandbox) -> String {
    std::fs::write(sandbox.work().join("notes.txt"), "status: draft\n").unwrap();
    sandbox.script(
        "live",
        json!([
            {"stream": [
                {"reasoning": "Look first."},
                {"text": "Checking."},
                {"tool_call": {"name": "bash", "arguments":
                    {"command": "printf 'one\\ntwo\\n'", "description": "print two lines"}}},
                {"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}}}
            ]},
            {"stream": [
                {"tool_call": {"name": "write", "arguments": {"content": "a\nb\n", "path": "new.txt"}}},
                {"tool_call": {"name": "edit", "arguments":
                    {"new_string": "done", "old_string": "draft", "path": "notes.txt"}}}
            ]},
            {"stream": [
                {"tool_call": {"name": "todo", "arguments": {"todos": [
                    {"content": "check", "status": "completed"},
                    {"content": "report", "status": "in_progress"}]}}}
            ]},
            {"stream": [
                {"tool_call": {"name": "bash", "arguments": {"command": "echo bad >&2; exit 3"}}},
                {"tool_call": {"name": "nosuch", "arguments": {}}}
            ]},
            {"stream": [{"text": "Done."}], "finish": "stop",
             "usage": {"input_tokens": 1200, "output_tokens": 30, "cache_hit_tokens": 1000}}
        ]),
    )
}

/// `--json`'s `tool_output` lines of one call in a row joined into one, as [`joined`] does
/// for ACP: how the pipe's reads fell is not part of the golden. Other text is kept.
fn joined_output_lines(stdout: &str) -> String {
    // Written as dsh writes it: `type`, `call_id`, `output`.
    let line = |v: Value| {
        format!(
            r#"{{"type":"tool_output","call_id":{},"output":{}}}"#,
            v["call_id"], v["output"]
        )
    };
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<Value> = None;
    for text in stdout.lines() {
        let value: Option<Value> = serde_json::from_str(text).ok();
        match (value, &mut last) {
            (Some(v), Some(prev))
                if v["type"] == "tool_output" && prev["call_id"] == v["call_id"] =>
            {
                let joined = format!(
                    "{}{}",
                    prev["output"].as_str().unwrap(),
                    v["output"].as_str().unwrap()
                );
                prev["output"] = json!(joined);
            }
            (Some(v), _) if v["type"] == "tool_output" => {
                out.extend(last.take().map(line));
                last = Some(v);
            }
            _ => {
                out.extend(last.take().map(line));
                out.push(text.to_owned());
            }
        }
    }
    out.extend(last.map(line));
    out.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn a_live_run_prints_the_same() {
    for (args, name) in [
        (&["--color", "never"][..], "run_plain"),
        (&["--color", "always"][..], "run_colour"),
        (&["--json"][..], "run_json"),
    ] {
        let sandbox = Sandbox::new();
        let script = live_script(&sandbox);
        let mut all = vec!["--replay", script.as_str(), "run", "--permission", "allow"];
        all.extend_from_slice(args);
        all.push("go");
        let out = sandbox.dsh(&all).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = joined_output_lines(&text(&out.stdout));
        let shown = format!("{stdout}--- stderr\n{}", text(&out.stderr));
        snapshot(&sandbox, name, &shown);
    }
}

#[test]
fn a_live_acp_prompt_sends_the_same() {
    for (cards, mode) in [(true, "cards"), (false, "text")] {
        let sandbox = Sandbox::new();
        let script = live_script(&sandbox);
        let mut acp = AcpDriver::allowing(&sandbox, &script);
        acp.initialize(cards);
        let session = acp.new_session(&sandbox.work());
        let (response, updates) = acp.prompt_to_end(&session, "go");
        assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
        let usage = acp.usage.clone();
        acp.finish();
        let mut shown = pretty(&joined(updates));
        shown.push_str("\n--- usage\n");
        shown.push_str(&pretty(&usage));
        snapshot(&sandbox, &format!("live_{mode}"), &shown);
    }
}
