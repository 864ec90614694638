//! `dsh acp` without a key: the editor gets an answered `initialize` and, for each session it
//! asks for, ACP's `auth_required` with what to set and where — never a server that exited.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use serde_json::json;

#[test]
fn without_a_key_initialize_is_answered_and_sessions_are_refused_with_the_guidance() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::spawn(sandbox.dsh(["acp"]));
    let init = acp.initialize(false);
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["authMethods"], json!([]), "no method fits a variable");
    for (method, params) in [
        (
            "session/new",
            json!({"cwd": sandbox.work(), "mcpServers": []}),
        ),
        (
            "session/load",
            json!({"sessionId": "01a24000-0000-7000-8000-000000000000",
                   "cwd": sandbox.work(), "mcpServers": []}),
        ),
    ] {
        let id = acp.request(method, params);
        let (response, _) = acp.response(&id);
        let error = &response["error"];
        assert_eq!(error["code"], -32000, "{method}: {response}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("DEEPSEEK_API_KEY"), "{message}");
        assert!(message.contains("\"agent_servers\""), "{message}");
        assert!(message.contains("\"env\""), "{message}");
    }
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(sandbox.logs().is_empty(), "nothing was stored");
}
