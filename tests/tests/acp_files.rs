//! The file tools over ACP: with a client that offers `fs`, reads see the editor's unsaved
//! buffers and edits go to `fs/write_text_file`, shown as diff cards and asked about with the
//! diff; without `fs`, the same cards over local files; an editor that refuses a write fails
//! that call only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::Sandbox;
use dsh_e2e::acp::{AcpDriver, Editor, Policy};
use dsh_test_support::tree::write;
use serde_json::{Value, json};

/// Reads `notes.txt`, then replaces `unsaved line` in it.
fn read_then_edit(sandbox: &Sandbox) -> String {
    sandbox.script(
        "files",
        json!([
            {"stream": [{"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}}}]},
            {"stream": [{"tool_call": {"name": "edit", "arguments": {"path": "notes.txt",
                "old_string": "unsaved line", "new_string": "edited line"}}}]},
            {"stream": [{"text": "done"}], "finish": "stop"}
        ]),
    )
}

fn zed_caps() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true},
           "_meta": {"terminal_output": true}})
}

fn calls<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

#[test]
fn with_an_editor_reads_see_unsaved_buffers_and_edits_are_written_through_it() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "first\nsaved line\n");
    let mut acp = AcpDriver::start(&sandbox, &read_then_edit(&sandbox), &[]);
    acp.policy = Policy::Allow;
    acp.editor = Some(Editor {
        buffers: [(notes.clone(), "first\nunsaved line\n".to_owned())].into(),
        ..Editor::default()
    });
    acp.initialize_with(zed_caps());
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{updates:#?}");

    let editor = acp.editor.take().unwrap();
    let methods: Vec<&str> = editor
        .calls
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"fs/read_text_file"), "{methods:?}");
    assert_eq!(methods.last(), Some(&"fs/write_text_file"), "{methods:?}");
    let written = editor.calls.last().unwrap();
    assert_eq!(written["params"]["sessionId"], session.as_str());
    assert_eq!(written["params"]["path"], notes.to_str().unwrap());
    assert_eq!(written["params"]["content"], "first\nedited line\n");
    assert_eq!(editor.buffers[&notes], "first\nedited line\n");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first\nsaved line\n",
        "the disk is the editor's to save"
    );

    let announced = calls(&updates, "tool_call");
    assert_eq!(announced[0]["kind"], "read");
    assert_eq!(announced[0]["title"], "Read notes.txt");
    assert_eq!(
        announced[0]["locations"][0]["path"],
        notes.to_str().unwrap()
    );
    assert_eq!(announced[1]["kind"], "edit");
    assert_eq!(
        announced[1]["locations"][0]["path"],
        notes.to_str().unwrap()
    );

    // The question shows the diff.
    assert_eq!(acp.asked.len(), 1, "reads never ask");
    let question = &acp.asked[0]["params"]["toolCall"];
    let diff = question["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff in the question: {question}"));
    assert_eq!(diff["path"], notes.to_str().unwrap());
    assert_eq!(diff["oldText"], "first\nunsaved line\n");
    assert_eq!(diff["newText"], "first\nedited line\n");

    // The finished card too.
    let edit_id = &announced[1]["toolCallId"];
    let done = updates
        .iter()
        .find(|u| &u["toolCallId"] == edit_id && u["status"] == "completed")
        .unwrap_or_else(|| panic!("the edit never completed: {updates:#?}"));
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["newText"], "first\nedited line\n");
    assert_eq!(done["locations"][0]["line"], 1);
    acp.finish();
}

#[test]
fn without_fs_the_same_cards_come_from_local_files() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "first\nunsaved line\n");
    let mut acp = AcpDriver::allowing(&sandbox, &read_then_edit(&sandbox));
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{updates:#?}");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first\nedited line\n"
    );
    let announced = calls(&updates, "tool_call");
    assert_eq!(announced[1]["kind"], "edit");
    let done = updates
        .iter()
        .find(|u| u["toolCallId"] == announced[1]["toolCallId"] && u["status"] == "completed")
        .unwrap();
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["oldText"], "first\nunsaved line\n");
    assert!(acp.asked.is_empty());
    acp.finish();
}

#[test]
fn an_editor_refusing_a_write_fails_that_call_and_not_the_turn() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "first\nunsaved line\n");
    let mut acp = AcpDriver::allowing(&sandbox, &read_then_edit(&sandbox));
    acp.editor = Some(Editor {
        fail_writes: true,
        ..Editor::default()
    });
    acp.initialize_with(zed_caps());
    let session = acp.new_session(&sandbox.work());
    let (response, updates) = acp.prompt_to_end(&session, "go");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{updates:#?}");
    let announced = calls(&updates, "tool_call");
    let failed = updates
        .iter()
        .find(|u| u["toolCallId"] == announced[1]["toolCallId"] && u["status"] == "failed")
        .unwrap_or_else(|| panic!("the edit did not fail: {updates:#?}"));
    let text = failed["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("the buffer is read-only"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first\nunsaved line\n"
    );
    acp.finish();
}

#[test]
fn a_loaded_session_replays_the_same_edit_card() {
    let sandbox = Sandbox::new();
    let notes = sandbox.work().join("notes.txt");
    write(&notes, "first\nunsaved line\n");
    let script = read_then_edit(&sandbox);
    let mut acp = AcpDriver::allowing(&sandbox, &script);
    acp.initialize(true);
    let session = acp.new_session(&sandbox.work());
    let (_, live) = acp.prompt_to_end(&session, "go");
    acp.finish();
    let finished = |updates: &[Value]| -> Value {
        updates
            .iter()
            .rfind(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
            .unwrap_or_else(|| panic!("no completed call: {updates:#?}"))
            .clone()
    };
    let mut again = AcpDriver::allowing(&sandbox, &script);
    again.initialize(true);
    let id = again.request(
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.work(), "mcpServers": []}),
    );
    let (response, before) = again.response(&id);
    assert!(response.get("error").is_none(), "{response}");
    let replayed: Vec<Value> = before
        .into_iter()
        .filter(|f| f["method"] == "session/update")
        .map(|f| f["params"]["update"].clone())
        .collect();
    let (live, replayed) = (finished(&live), finished(&replayed));
    assert_eq!(live["content"], replayed["content"]);
    assert_eq!(replayed["content"][0]["type"], "diff");
    assert_eq!(live["locations"], replayed["locations"]);
    again.finish();
}
