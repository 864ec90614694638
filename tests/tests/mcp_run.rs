//! `dsh run` with MCP servers from the configuration file: the reference server's tools are
//! offered as `everything__<tool>` and called, a server that cannot start is one warning
//! line and the run goes on, `dsh config` names the servers without their secrets, and
//! nothing a server started outlives the run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, mcp_reference_server, text, wait_gone};
use serde_json::{Value, json};

fn config(sandbox: &Sandbox, body: &str) -> std::path::PathBuf {
    let path = sandbox.root.path().join("config.toml");
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn a_configured_server_s_tools_are_called_and_a_broken_one_is_one_warning() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let sandbox = Sandbox::new();
    let marker = format!("DSH_MCP_RUN={}", sandbox.root.path().display());
    let path = config(
        &sandbox,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{script:?}]\n\
             env = {{ DSH_MCP_RUN = {:?}, TOKEN = \"$DSH_TEST_TOKEN\" }}\n\n\
             [mcp_servers.ghost]\ncommand = \"/nonexistent/mcp-ghost\"\n\n\
             [mcp_servers.unset]\ncommand = \"node\"\nenv = {{ K = \"$DSH_TEST_UNSET\" }}\n",
            sandbox.root.path().display().to_string()
        ),
    );
    let replay = sandbox.script(
        "mcp",
        json!([
            {"stream": [{"tool_call": {"name": "everything__echo",
                "arguments": {"message": "hello over MCP"}}}]},
            {"stream": [{"tool_call": {"name": "everything__get-sum",
                "arguments": {"a": 20, "b": 22}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let log = sandbox.root.path().join("calls.jsonl");
    let out = sandbox
        .dsh(["--replay", &replay, "run", "use the tools"])
        .env("DSH_CONFIG", &path)
        .env("DSH_TEST_TOKEN", "s3cret")
        .env("DSH_REPLAY_LOG", &log)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("ghost")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].starts_with("warning: MCP server ghost did not start"),
        "{stderr}"
    );
    assert!(warnings[0].contains("/nonexistent/mcp-ghost"), "{stderr}");
    // A secret's variable that is not set is the same kind of warning, naming the variable.
    let unset: Vec<&str> = stderr.lines().filter(|l| l.contains("unset")).collect();
    assert_eq!(unset.len(), 1, "{stderr}");
    assert!(
        unset[0].starts_with("warning: MCP server unset did not start")
            && unset[0].contains("$DSH_TEST_UNSET, which is not set"),
        "{stderr}"
    );

    // The model was offered the server's tools, and their results came back.
    let calls: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools = calls[0]["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("everything__echo")), "{tools:?}");
    assert!(tools.contains(&json!("everything__get-sum")), "{tools:?}");
    let events = std::fs::read_to_string(&sandbox.logs()[0]).unwrap();
    let results: Vec<Value> = events
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool/result")
        .map(|e| e["data"].clone())
        .collect();
    assert_eq!(results.len(), 2);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("hello over MCP"),
        "{results:?}"
    );
    assert!(
        results[1]["content"].as_str().unwrap().contains("42"),
        "{results:?}"
    );
    // The server and everything it started are gone with the run.
    wait_gone(&marker);

    let shown = sandbox
        .dsh(["config"])
        .env("DSH_CONFIG", &path)
        .env("DSH_TEST_TOKEN", "s3cret")
        .output()
        .unwrap();
    let shown = text(&shown.stdout);
    assert!(shown.contains("mcp_servers.everything"), "{shown}");
    assert!(shown.contains("env DSH_MCP_RUN, TOKEN"), "{shown}");
    // Each server's source is the line of its own table.
    let body = std::fs::read_to_string(&path).unwrap();
    for server in ["everything", "ghost"] {
        let line = 1 + body
            .lines()
            .position(|l| l == format!("[mcp_servers.{server}]"))
            .unwrap();
        let row = shown
            .lines()
            .find(|l| l.starts_with(&format!("mcp_servers.{server} ")))
            .unwrap();
        assert!(row.ends_with(&format!("config.toml:{line}")), "{row}");
    }
    assert!(
        !shown.contains("s3cret") && !shown.contains("$DSH_TEST_TOKEN"),
        "{shown}"
    );
}

#[test]
fn a_malformed_server_table_is_refused_with_its_place() {
    let sandbox = Sandbox::new();
    for (body, says) in [
        (
            "[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h/mcp\"\n",
            "has both `command` and `url`",
        ),
        (
            "[mcp_servers.x]\nargs = [\"a\"]\n",
            "needs `command` (stdio) or `url`",
        ),
        (
            "[mcp_servers.x]\ncommand = \"a\"\ntimeout = 3\n",
            "unknown field `timeout` in mcp_servers.x",
        ),
        (
            "[mcp_servers.x]\nurl = \"ftp://h\"\n",
            "an http:// or https:// URL",
        ),
    ] {
        let path = config(&sandbox, body);
        let out = sandbox
            .dsh(["config"])
            .env("DSH_CONFIG", &path)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{body}");
        assert!(stderr.contains(says), "{body}: {stderr}");
        assert!(stderr.contains("config.toml:"), "{stderr}");
    }
}

#[test]
fn over_acp_a_read_only_tool_runs_unasked_and_another_asks_first() {
    let Some(script) = mcp_reference_server() else {
        return;
    };
    let sandbox = Sandbox::new();
    let path = config(
        &sandbox,
        &format!("[mcp_servers.everything]\ncommand = \"node\"\nargs = [{script:?}]\n"),
    );
    let replay = sandbox.script(
        "mcp",
        json!([
            {"stream": [{"tool_call": {"name": "everything__echo",
                "arguments": {"message": "read me"}}}]},
            {"stream": [{"tool_call": {"name": "everything__toggle-simulated-logging",
                "arguments": {}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    );
    let mut command = sandbox.dsh(["--replay", &replay, "acp"]);
    command.env("DSH_CONFIG", &path);
    let mut acp = dsh_e2e::acp::AcpDriver::spawn(command);
    acp.policy = dsh_e2e::acp::Policy::Allow;
    acp.initialize(false);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    // Ask mode: only the tool the server does not call read-only asked.
    assert_eq!(acp.asked.len(), 1, "{:?}", acp.asked);
    let asked = &acp.asked[0]["params"]["toolCall"];
    // Titled with the server's name and the tool's own title.
    let title = asked["title"].as_str().unwrap().to_lowercase();
    assert!(
        title.starts_with("everything: ") && title.contains("toggle"),
        "{title}"
    );
    let calls: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .collect();
    assert!(
        calls[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("everything: "),
        "{}",
        calls[0]
    );
    assert_eq!(calls[0]["kind"], "read");
    let texts: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .map(|u| u.to_string())
        .collect();
    assert!(texts.contains("read me"), "{texts}");
    acp.finish();
}
