//! Permission rules from the configuration file and the default deny of secret stores,
//! against the built binary: a denied call does not run and the model is told which rule
//! denied it, an "ask" rule asks even in `allow` mode, and a rule of the user's overrides a
//! default.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};
use serde_json::json;

/// A script that makes `calls` (name, arguments) one after another, then answers "done".
fn calls(sandbox: &Sandbox, calls: &[(&str, serde_json::Value)]) -> String {
    let mut entries: Vec<serde_json::Value> = calls
        .iter()
        .map(|(name, arguments)| {
            json!({"stream": [{"tool_call": {"name": name, "arguments": arguments}}]})
        })
        .collect();
    entries.push(json!({"stream": [{"text": "done"}], "finish": "stop"}));
    sandbox.script("calls", json!(entries))
}

/// `dsh run` with `rules` as the configuration file: the file's path and the stored log.
fn run(sandbox: &Sandbox, rules: &str, script: &str) -> (String, String) {
    let path = config(sandbox, rules);
    let out = sandbox
        .dsh_without_terminal(["--config", &path, "--replay", script, "run", "go"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    (path, stored)
}

fn config(sandbox: &Sandbox, body: &str) -> String {
    let path = sandbox.root.path().join("config.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

#[test]
fn reads_of_secret_stores_are_denied_by_default_and_a_user_rule_overrides_it() {
    let sandbox = Sandbox::new();
    let ssh = sandbox.root.path().join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE-KEY-MATERIAL\n").unwrap();
    std::fs::write(ssh.join("config"), "Host example\n").unwrap();
    // The rule's `~` is the home directory; the read tool takes the path as written.
    let config_file = ssh.join("config").display().to_string();
    let script = calls(
        &sandbox,
        &[
            ("read", json!({"path": "~/.ssh/id_rsa"})),
            (
                "read",
                json!({"path": ssh.join("id_rsa").display().to_string()}),
            ),
            ("read", json!({"path": config_file})),
        ],
    );
    let (_, stored) = run(
        &sandbox,
        "[permissions]\nallow = [\"read(~/.ssh/config)\"]\n",
        &script,
    );
    assert!(
        stored.contains("permission rule `{read,grep,glob}(~/.ssh/**)` denies this call"),
        "{stored}"
    );
    // Both reads of the key, by `~` and by its whole path, were denied.
    assert_eq!(stored.matches("denies this call").count(), 2, "{stored}");
    assert!(
        !stored.contains("PRIVATE-KEY-MATERIAL"),
        "the key reached the log"
    );
    assert!(
        stored.contains("Host example"),
        "the allowed read ran: {stored}"
    );
}

#[test]
fn deny_and_ask_rules_hold_in_allow_mode() {
    let sandbox = Sandbox::new();
    let script = calls(
        &sandbox,
        &[
            ("bash", json!({"command": "rm -f made"})),
            ("bash", json!({"command": "git push origin main"})),
            ("bash", json!({"command": "touch made"})),
        ],
    );
    let (path, stored) = run(
        &sandbox,
        "[permissions]\ndeny = [\"bash(rm *)\"]\nask = [\"bash(git push*)\"]\n",
        &script,
    );
    assert!(
        stored.contains("permission rule `bash(rm *)` denies this call"),
        "{stored}"
    );
    // Even in `allow` mode the rule's question goes to the terminal; with none, it is no.
    assert!(
        stored.contains("there is no terminal to ask on"),
        "{stored}"
    );
    assert!(sandbox.work().join("made").exists(), "an unruled call runs");
    // `dsh config` lists the rules; a pattern that is no rule is refused with its line.
    let shown = text(
        &sandbox
            .dsh(["--config", &path, "config"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(
        shown.contains("permissions.deny = [\"bash(rm *)\"]"),
        "{shown}"
    );
    let bad = config(&sandbox, "[permissions]\nallow = [\"bash(\"]\n");
    let out = sandbox.dsh(["--config", &bad, "config"]).output().unwrap();
    assert_eq!(out.status.code(), Some(6));
    let said = text(&out.stderr);
    assert!(said.contains("permission rule \"bash(\""), "{said}");
    assert!(said.contains(":2"), "names the line: {said}");
}

#[test]
fn in_ask_mode_a_read_outside_the_project_asks_and_one_inside_does_not() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("inside.txt"), "INSIDE-TEXT\n").unwrap();
    let outside = sandbox.root.path().join("outside.txt");
    std::fs::write(&outside, "OUTSIDE-TEXT\n").unwrap();
    let script = calls(
        &sandbox,
        &[
            ("read", json!({"path": "inside.txt"})),
            ("read", json!({"path": outside.display().to_string()})),
        ],
    );
    // No terminal: a question is answered no.
    let out = sandbox
        .dsh_without_terminal(["--replay", &script, "run", "--permission", "ask", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stored = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    assert!(stored.contains("INSIDE-TEXT"), "{stored}");
    assert!(!stored.contains("OUTSIDE-TEXT"), "{stored}");
    assert!(stored.contains("no terminal to ask on"), "{stored}");
}
