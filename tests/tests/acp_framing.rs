//! `dsh acp` on the wire: the handshake, and every kind of malformed input answered with the
//! right JSON-RPC error while the connection stays up.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::AcpDriver;
use serde_json::{Value, json};

fn text_script(sandbox: &Sandbox) -> String {
    sandbox.script(
        "hello",
        json!([{"stream": [{"text": "hi"}], "finish": "stop"}]),
    )
}

fn error_of(driver: &mut AcpDriver, id: &Value) -> (i64, Value) {
    let (response, _) = driver.response(id);
    let error = &response["error"];
    (error["code"].as_i64().unwrap_or(0), error["data"].clone())
}

#[test]
fn initialize_says_exactly_what_dsh_does() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    let result = acp.initialize(false);
    assert_eq!(
        result,
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": false},
                "sessionCapabilities": {
                    "systemPrompt": {"mode": {"override": {}}},
                    "list": {}, "resume": {}, "close": {}, "delete": {}
                },
                "auth": {}
            },
            "authMethods": [],
            "agentInfo": {"name": "dsh", "title": "dsh (replay: hello)",
                          "version": env!("CARGO_PKG_VERSION")}
        })
    );
    let (code, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("teardown complete reason=input-closed agents=0 sessions=0"),
        "{stderr}"
    );
}

#[test]
fn protocol_versions_are_checked_and_a_bad_one_leaves_the_connection_usable() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    for version in [json!(0), json!(2), json!(7), json!(65535)] {
        let id = acp.request("initialize", json!({"protocolVersion": version}));
        let (response, _) = acp.response(&id);
        assert_eq!(response["result"]["protocolVersion"], 1, "{version}");
    }
    for version in [json!("1"), json!(-1), json!(1.5), json!(65536), Value::Null] {
        let params = if version.is_null() {
            json!({})
        } else {
            json!({"protocolVersion": version})
        };
        let id = acp.request("initialize", params);
        assert_eq!(error_of(&mut acp, &id).0, -32602, "{version}");
    }
    assert_eq!(acp.initialize(false)["protocolVersion"], 1);
    acp.finish();
}

#[test]
fn requests_before_initialize_are_refused_and_notifications_ignored() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    acp.notify("session/cancel", json!({"sessionId": "x"}));
    let id = acp.request(
        "session/new",
        json!({"cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, before) = acp.response(&id);
    assert!(
        before.is_empty(),
        "the notification was answered: {before:?}"
    );
    assert_eq!(response["error"]["code"], -32600);
    assert_eq!(
        response["error"]["message"],
        "initialize must be called first"
    );
    acp.initialize(false);
    acp.finish();
}

#[test]
fn malformed_lines_get_parse_and_envelope_errors_and_later_frames_are_served() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    let cases: [(&[u8], i64, Value); 9] = [
        (b"not json\n", -32700, Value::Null),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}\n",
            -32700,
            Value::Null,
        ),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}]\n",
            -32600,
            Value::Null,
        ),
        (b"{\"id\":5}\n", -32600, json!(5)),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":6,\"method\":\"initialize\"}\n",
            -32600,
            json!(6),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":42}\n",
            -32600,
            json!(7),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"initialize\"}\n",
            -32600,
            Value::Null,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1e30,\"method\":\"initialize\"}\n",
            -32600,
            Value::Null,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"initialize\",\"params\":[1]}\n",
            -32602,
            json!(9),
        ),
    ];
    for (line, code, id) in cases {
        acp.write_raw(line);
        let frame = acp.next_frame().unwrap();
        assert_eq!(
            frame["error"]["code"],
            code,
            "{}",
            String::from_utf8_lossy(line)
        );
        assert_eq!(frame["id"], id, "{}", String::from_utf8_lossy(line));
    }
    // Blank lines are skipped; CRLF is accepted.
    acp.write_raw(b"\n   \r\n");
    acp.write_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\r\n",
    );
    let frame = acp.next_frame().unwrap();
    assert_eq!(frame["id"], "crlf");
    assert_eq!(frame["result"]["protocolVersion"], 1);
    acp.finish();
}

#[test]
fn ids_are_echoed_exactly() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    for id in [
        json!("a-1"),
        json!("1"),
        json!(0),
        json!(9_007_199_254_740_991_i64),
        Value::Null,
    ] {
        acp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                         "params": {"protocolVersion": 1}}));
        let frame = acp.next_frame().unwrap();
        assert_eq!(frame["id"], id);
        assert_eq!(frame["id"].is_string(), id.is_string());
    }
    acp.finish();
}

#[test]
fn an_over_long_line_is_refused_with_its_id_when_readable_and_the_next_request_served() {
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("acp.toml");
    std::fs::write(&config, "[acp]\nmax_line_bytes = 65536\n").unwrap();
    let script = text_script(&sandbox);
    let mut command = sandbox.dsh([
        "--config",
        config.to_str().unwrap(),
        "--replay",
        &script,
        "acp",
    ]);
    command.arg("--permission").arg("allow");
    let mut acp = AcpDriver::spawn(command);
    let mut long = json!({"jsonrpc": "2.0", "id": "long", "method": "initialize",
                          "params": {"protocolVersion": 1, "pad": ""}})
    .to_string();
    let pad = 65_537 - long.len();
    long = long.replace("\"pad\":\"\"", &format!("\"pad\":\"{}\"", "x".repeat(pad)));
    assert_eq!(long.len(), 65_537);
    acp.write_raw(format!("{long}\n").as_bytes());
    let frame = acp.next_frame().unwrap();
    assert_eq!(frame["error"]["code"], -32700);
    assert_eq!(
        frame["id"], "long",
        "the id is read from the part within the limit"
    );
    assert_eq!(frame["error"]["data"]["limit"], 65536);
    // An id written after the padding is beyond the limit: unreadable, so null. (The line
    // is left unclosed so the driver does not count it as a request it must see answered.)
    let late = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"initialize\",\"params\":{{\"pad\":\"{}\"}},\"id\":\"late\"\n",
        "x".repeat(70_000)
    );
    acp.write_raw(late.as_bytes());
    let frame = acp.next_frame().unwrap();
    assert_eq!(frame["error"]["code"], -32700);
    assert_eq!(frame["id"], Value::Null);
    assert_eq!(acp.initialize(false)["protocolVersion"], 1);
    // A prompt over the limit is answered with its id: the client does not wait forever.
    let session = acp.new_session(&sandbox.work());
    let huge = json!({"jsonrpc": "2.0", "id": "big", "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "y".repeat(100_000)}]}});
    acp.write_raw(format!("{huge}\n").as_bytes());
    let (response, _) = acp.response(&json!("big"));
    assert_eq!(response["error"]["code"], -32700);
    let (response, _) = acp.prompt_to_end(&session, "and a short one");
    assert_eq!(response["result"]["stopReason"], "end_turn");
    acp.finish();
}

#[test]
fn unknown_and_unadvertised_methods_are_not_found_and_authenticate_is_accepted() {
    let sandbox = Sandbox::new();
    let mut acp = AcpDriver::start(&sandbox, &text_script(&sandbox), &[]);
    acp.initialize(false);
    for method in ["logout", "_zed/extension", "$/cancel_request", "no/such"] {
        let id = acp.request(method, json!({}));
        let (code, data) = error_of(&mut acp, &id);
        assert_eq!(code, -32601, "{method}");
        assert_eq!(data["method"], method);
    }
    let id = acp.request("authenticate", json!({"methodId": "x"}));
    let (response, _) = acp.response(&id);
    assert_eq!(response["result"], json!({}));
    acp.notify("_zed/whatever", json!({}));
    acp.notify("no/such", json!({}));
    assert_eq!(
        acp.initialize(false)["protocolVersion"],
        1,
        "notifications get no answer"
    );
    acp.finish();
}

#[test]
fn a_bad_acp_setting_exits_before_reading_with_one_line_and_an_empty_stdout() {
    let sandbox = Sandbox::new();
    let config = sandbox.root.path().join("acp.toml");
    std::fs::write(&config, "[acp]\npermission = \"sometimes\"\n").unwrap();
    let out = sandbox
        .dsh([
            "--config",
            config.to_str().unwrap(),
            "--replay",
            "demo",
            "acp",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("permission must be"), "{stderr}");
}
