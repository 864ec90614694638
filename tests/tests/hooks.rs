//! The user's hooks, as a user configures them: `[hooks]` in their own `config.toml`, real
//! scripts, the built binary and a model server on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, recording_server, text, tool_results};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use serde_json::json;

/// Writes the user's configuration with these hooks.
fn configure(sandbox: &Sandbox, hooks: &str) {
    let dir = sandbox.root.path().join("home/.config/dsh");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), hooks).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_blocks_a_command_with_its_reason_and_a_post_hook_adds_context() {
    let (server, seen) = recording_server(|body| match tool_results(body).len() {
        0 => MockResponse::tool_call("bash", &json!({"command": "rm -rf junk"})),
        1 => MockResponse::tool_call("bash", &json!({"command": "ls"})),
        _ => MockResponse::text("done"),
    })
    .await;
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.work().join("junk")).unwrap();
    // The guard reads the call from stdin as Claude Code's scripts do.
    configure(
        &sandbox,
        r#"
[[hooks.PreToolUse]]
matcher = "Bash"
hooks = [{ command = '''input=$(cat); case "$input" in *'rm -rf'*) echo "no rm -rf in this project" >&2; exit 2;; esac''', on_error = "deny" }]

[[hooks.PostToolUse]]
matcher = "Bash"
hooks = [{ command = '''echo '{"hookSpecificOutput":{"additionalContext":"the audit saw it"}}' ''' }]
"#,
    );
    let out = sandbox
        .run_against(&server.base_url(), &["--permission", "allow", "clean up"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(sandbox.work().join("junk").exists(), "the guard kept it");
    let results = tool_results(seen.lock().unwrap().last().unwrap());
    assert!(
        results[0].contains("refused this call: no rm -rf in this project"),
        "{results:?}"
    );
    assert!(results[1].contains("junk"), "ls ran: {results:?}");
    assert!(
        results[1].ends_with("[hook context: the audit saw it]"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_crashes_blocks_only_when_it_fails_closed() {
    for (on_error, runs) in [("deny", false), ("allow", true)] {
        let server = MockModelServer::start(vec![
            MockResponse::tool_call("bash", &json!({"command": "touch made"})),
            MockResponse::text("done"),
        ])
        .await;
        let sandbox = Sandbox::new();
        configure(
            &sandbox,
            &format!(
                "[[hooks.PreToolUse]]\nhooks = [{{ command = \"jq-that-is-missing .tool_name\", on_error = \"{on_error}\" }}]\n"
            ),
        );
        let out = sandbox
            .run_against(&server.base_url(), &["--permission", "allow", "go"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(
            sandbox.work().join("made").exists(),
            runs,
            "on_error = {on_error}"
        );
    }
}
