//! Foreground `bash`: result texts, truncation, errors, metadata, cancellation.

use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn results_end_with_exactly_one_status_line_and_carry_no_varying_value() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let cases = [
        (json!({"command": "echo hello"}), "hello\n[exit code: 0]"),
        (json!({"command": "true"}), "(no output)\n[exit code: 0]"),
        (
            json!({"command": "echo out; echo err >&2; exit 3"}),
            "out\nerr\n[exit code: 3]",
        ),
        (json!({"command": "printf x"}), "x\n[exit code: 0]"),
        (
            json!({"command": "sleep 60", "timeout_ms": 100}),
            "(no output)\n[timed out after 100 ms; killed by signal: SIGTERM]",
        ),
        (
            json!({"command": "trap 'exit 0' TERM; sleep 60 & wait", "timeout_ms": 100}),
            "(no output)\n[timed out after 100 ms; exit code: 0]",
        ),
        (
            json!({"command": "kill -TERM $$"}),
            "(no output)\n[killed by signal: SIGTERM]",
        ),
        (
            json!({"command": r"printf 'a\377b\376'"}),
            "a\u{FFFD}b\u{FFFD}\n[exit code: 0]",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(
            ok(rig.call("bash", args.clone(), a.cx()).await),
            expected,
            "{args}"
        );
    }
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_is_a_normal_result_with_code_127() {
    let rig = Rig::new().await;
    let text = ok(rig
        .call(
            "bash",
            json!({"command": "nosuchcmd_marker_q"}),
            rig.caller(None).cx(),
        )
        .await);
    assert!(text.contains("not found"));
    assert!(text.ends_with("[exit code: 127]"));
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn processes_left_running_are_terminated_and_the_result_says_so() {
    let rig = Rig::new().await;
    let m = marker();
    let text = ok(rig
        .call(
            "bash",
            json!({"command": format!("sleep 1000.{m} & echo hi")}),
            rig.caller(None).cx(),
        )
        .await);
    assert_eq!(
        text,
        "hi\n[note: processes this command left running were terminated; use run_in_background for long-running processes]\n[exit code: 0]"
    );
    all_gone(&m).await;
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn the_result_metadata_is_structured_so_renderers_never_parse_text() {
    let rig = Rig::new().await;
    let out = rig
        .call("bash", json!({"command": "exit 3"}), rig.caller(None).cx())
        .await
        .unwrap();
    let meta = out.meta.unwrap();
    assert_eq!(meta["exit_code"], 3);
    assert_eq!(meta["signal"], serde_json::Value::Null);
    assert_eq!(meta["timed_out"], false);
    assert_eq!(meta["truncated"], false);
    assert_eq!(meta["total_bytes"], 0);
    assert!(meta["task_id"].as_str().unwrap().starts_with("sh-"));
    let out = rig
        .call(
            "bash",
            json!({"command": "sleep 60", "timeout_ms": 50}),
            rig.caller(None).cx(),
        )
        .await
        .unwrap();
    let meta = out.meta.unwrap();
    assert_eq!(
        (meta["signal"].as_str(), meta["timed_out"].as_bool()),
        (Some("SIGTERM"), Some(true))
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn huge_output_shows_head_notice_and_tail_and_the_rest_reads_from_the_notice_offset() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let full: String = (1..=3_000_000).map(|n| format!("{n}\n")).collect();
    let text = ok(rig
        .call("bash", json!({"command": "seq 1 3000000"}), a.cx())
        .await);
    let (head, rest) = text.split_once("\n[output truncated: ").unwrap();
    assert!(head == &full[..8192], "the 8 KiB head");
    let (notice, tail) = rest.split_once("]\n").unwrap();
    let b = full.len() - 24 * 1024;
    let id = text_between(notice, "task_id=\"", "\"");
    assert_eq!(
        notice,
        format!(
            "{} bytes omitted between offsets 8192 and {b} of {}. The full output is kept in a spill file ({} bytes). Read them with bash_output task_id=\"{id}\" offset=8192",
            b - 8192,
            full.len(),
            full.len()
        )
    );
    assert!(
        tail == format!("{}[exit code: 0]", &full[b..]),
        "the 24 KiB tail"
    );
    let read = ok(rig
        .call(
            "bash_output",
            json!({"task_id": id, "offset": 8192}),
            a.cx(),
        )
        .await);
    assert!(read.starts_with(&full[8192..8192 + 1000]));
    rig.runtime.shutdown().await;
}

fn text_between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap() + start.len();
    let to = from + text[from..].find(end).unwrap();
    &text[from..to]
}

#[tokio::test]
async fn a_partial_spill_notice_says_which_bytes_are_lost() {
    let rig = Rig::with_shell(dsh_test_providers::providers::LocalShellConfig {
        spill_cap: 1 << 20,
        ..shell_config()
    })
    .await;
    let text = ok(rig
        .call(
            "bash",
            json!({"command": "head -c 5242880 /dev/zero | tr '\\0' x"}),
            rig.caller(None).cx(),
        )
        .await);
    let total = 5u64 << 20;
    let b = total - 24 * 1024;
    assert!(text.contains(&format!(
        "[output truncated: {} bytes omitted between offsets 8192 and {b} of {total}. The spill file holds only the first 1048576 bytes (size limit reached); bytes 1048576..{b} are lost. Read them with bash_output",
        b - 8192
    )), "{}", &text[8190..8700]);
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn output_just_over_the_tail_is_shown_once_without_a_notice() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    // 30,000 bytes: more than the 24 KiB tail, less than head plus tail.
    let text = ok(rig
        .call(
            "bash",
            json!({"command": "head -c 30000 /dev/zero | tr '\\0' y"}),
            a.cx(),
        )
        .await);
    assert_eq!(text, format!("{}\n[exit code: 0]", "y".repeat(30000)));
    assert!(
        rig.exec().list().is_empty(),
        "a completely shown run is released at once"
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn a_head_cut_inside_a_character_shows_no_replacement_character() {
    let rig = Rig::new().await;
    // 8191 ASCII bytes, then euros: the 8 KiB head ends inside the first one.
    let command = "printf 'a%.0s' $(seq 1 8191); for i in $(seq 1 20000); do printf '€'; done";
    let text = ok(rig
        .call("bash", json!({"command": command}), rig.caller(None).cx())
        .await);
    assert!(
        !text.contains('\u{FFFD}'),
        "a boundary made a replacement character"
    );
    assert!(
        text.contains("bytes omitted between offsets 8191 and"),
        "the head held the split character back"
    );
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn bad_arguments_and_bad_directories_are_errors_with_their_codes() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let cases = [
        (
            json!("not an object"),
            "invalid_arguments",
            "invalid arguments: ",
        ),
        (
            json!({"command": 5}),
            "invalid_arguments",
            "invalid arguments: ",
        ),
        (
            json!({"command": "true", "env": {"A": "b"}}),
            "invalid_arguments",
            "invalid arguments: unknown field `env`",
        ),
        (
            json!({"command": "true", "timeout": 5}),
            "invalid_arguments",
            "invalid arguments: unknown field `timeout`",
        ),
        (
            json!({}),
            "invalid_arguments",
            "invalid arguments: missing field `command`",
        ),
        (
            json!({"command": "  "}),
            "invalid_arguments",
            "invalid command: expected a non-empty string",
        ),
        (
            json!({"command": "true", "timeout_ms": 0}),
            "invalid_arguments",
            "invalid timeout_ms: expected an integer between 1 and 600000, got 0",
        ),
        (
            json!({"command": "true", "timeout_ms": 600001}),
            "invalid_arguments",
            "invalid timeout_ms: expected an integer between 1 and 600000, got 600001",
        ),
        (
            json!({"command": "true", "workdir": ""}),
            "invalid_arguments",
            "invalid workdir: expected a non-empty path",
        ),
        (
            json!({"command": "true", "workdir": "/no/such/dir"}),
            "bad_workdir",
            "cannot run in workdir \"/no/such/dir\": ",
        ),
    ];
    for (args, code, start) in cases {
        let error = err(rig.call("bash", args.clone(), a.cx()).await);
        assert_eq!(error.code, code, "{args}");
        assert!(
            error.message.starts_with(start),
            "{args}: {}",
            error.message
        );
    }
    assert!(rig.exec().list().is_empty());
    rig.runtime.shutdown().await;
}

#[tokio::test]
async fn cancelling_the_call_ends_the_command_tree_and_answers_cancelled() {
    let rig = Rig::new().await;
    let a = rig.caller(None);
    let m = marker();
    let cancel = a.cancel.clone();
    let (shown, mut seen) = tokio::sync::mpsc::unbounded_channel::<String>();
    let cx = a.cx().with_progress(std::sync::Arc::new(move |text: &str| {
        let _ = shown.send(text.to_owned());
    }));
    let call = rig.call(
        "bash",
        json!({"command": format!("echo printed so far; sleep 1000.{m} & sleep 1000.{m}; wait")}),
        cx,
    );
    let watcher = async {
        assert_eq!(
            seen.recv().await.as_deref(),
            Some("printed so far\n"),
            "shown live"
        );
        eventually("tree up", || sleepers(&m) == 2).await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(call, watcher);
    let error = err(result);
    assert_eq!(error.code, "cancelled");
    assert!(
        error
            .message
            .starts_with("printed so far\n[cancelled by the user after "),
        "the output so far and what ended it: {}",
        error.message
    );
    all_gone(&m).await;
    eventually("forgotten", || rig.exec().list().is_empty()).await;
    rig.runtime.shutdown().await;
}
