//! `read` and `write`.

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_numbers_lines_and_says_how_to_read_on() {
    let rig = Rig::new().await;
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    write(rig.root().join("big.txt"), &text);
    let me = rig.caller();
    let out = ok(rig.call(&me, "read", json!({"path": "big.txt"})).await);
    assert!(
        out.content.starts_with("     1\tline 1\n"),
        "{}",
        &out.content[..40]
    );
    assert!(out.content.contains("  2000\tline 2000\n"));
    assert!(!out.content.contains("line 2001\n"));
    assert!(
        out.content
            .ends_with("[Lines 1–2000 of 2500. Read on with offset 2001.]\n")
    );
    let out = ok(rig
        .call(
            &me,
            "read",
            json!({"path": "big.txt", "offset": 2499, "limit": 5}),
        )
        .await);
    assert_eq!(out.content, "  2499\tline 2499\n  2500\tline 2500\n");
    assert_eq!(
        out.meta.unwrap()["summary"],
        "read big.txt: lines 2499–2500 of 2500"
    );
    let e = err(rig
        .call(&me, "read", json!({"path": "big.txt", "offset": 2501}))
        .await);
    assert!(
        e.message
            .contains("has 2500 lines, so line 2501 is past its end"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_lines_are_cut_and_empty_and_missing_files_say_so() {
    let rig = Rig::new().await;
    write(
        rig.root().join("wide.txt"),
        format!("{}\n", "é".repeat(3000)),
    );
    write(rig.root().join("empty.txt"), "");
    let me = rig.caller();
    let out = ok(rig.call(&me, "read", json!({"path": "wide.txt"})).await);
    assert!(out.content.contains("… [line cut at 2000 characters]"));
    let out = ok(rig.call(&me, "read", json!({"path": "empty.txt"})).await);
    assert_eq!(out.content, "(empty.txt is empty)");
    let e = err(rig.call(&me, "read", json!({"path": "nope.txt"})).await);
    assert_eq!(e.code, "not_found");
    assert!(e.message.contains("does not exist"), "{e}");
    write(rig.root().join("a.bin"), b"\x7fELF\0\0");
    let e = err(rig.call(&me, "read", json!({"path": "a.bin"})).await);
    assert_eq!(e.code, "not_text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_creates_files_but_overwrites_only_what_was_read() {
    let rig = Rig::new().await;
    let me = rig.caller();
    let out = ok(rig
        .call(
            &me,
            "write",
            json!({"path": "src/new.rs", "content": "fn main() {}\n"}),
        )
        .await);
    assert_eq!(out.content, "created src/new.rs (1 line).");
    assert_eq!(rig.file("src/new.rs"), "fn main() {}\n");
    let meta = out.meta.unwrap();
    assert_eq!(meta["old_text"], "");
    assert_eq!(meta["new_text"], "fn main() {}\n");

    write(rig.root().join("old.txt"), "old\n");
    let e = err(rig
        .call(&me, "write", json!({"path": "old.txt", "content": "new\n"}))
        .await);
    assert_eq!(e.code, "not_read");
    assert_eq!(rig.file("old.txt"), "old\n");
    ok(rig.call(&me, "read", json!({"path": "old.txt"})).await);
    ok(rig
        .call(&me, "write", json!({"path": "old.txt", "content": "new\n"}))
        .await);
    assert_eq!(rig.file("old.txt"), "new\n");

    // A whole-file write writes what it was given: a final newline the file lacked is added,
    // and one it had is dropped when the content has none.
    write(rig.root().join("bare.txt"), "hi");
    ok(rig.call(&me, "read", json!({"path": "bare.txt"})).await);
    ok(rig
        .call(&me, "write", json!({"path": "bare.txt", "content": "hi\n"}))
        .await);
    assert_eq!(rig.file("bare.txt"), "hi\n");
    ok(rig
        .call(&me, "write", json!({"path": "bare.txt", "content": "bye"}))
        .await);
    assert_eq!(rig.file("bare.txt"), "bye");

    // Another session's read does not count.
    let other = rig.caller();
    let e = err(rig
        .call(&other, "write", json!({"path": "old.txt", "content": "x"}))
        .await);
    assert_eq!(e.code, "not_read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_arguments_are_refused_and_nothing_is_written() {
    let rig = Rig::new().await;
    write(rig.root().join("a.txt"), "a\n");
    let me = rig.caller();
    ok(rig.call(&me, "read", json!({"path": "a.txt"})).await);
    let huge = "x".repeat(10 * 1024 * 1024);
    let cases = [
        ("read", json!({"path": 7}), "invalid type"),
        (
            "read",
            json!({"path": "a.txt", "offset": 0}),
            "invalid offset",
        ),
        (
            "read",
            json!({"path": "a.txt", "lines": 3}),
            "unknown field `lines`",
        ),
        ("read", json!({"path": ""}), "invalid path"),
        ("write", json!({"path": "a.txt"}), "missing field `content`"),
        (
            "write",
            json!({"path": "a.txt", "content": huge}),
            "over the",
        ),
        (
            "edit",
            json!({"path": "a.txt", "old_string": "a"}),
            "go together",
        ),
        (
            "edit",
            json!({"path": "a.txt", "old_string": "", "new_string": "b"}),
            "it is empty",
        ),
        (
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": "a"}),
            "changes nothing",
        ),
        (
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": huge}),
            "over the",
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": []}),
            "at least one edit",
        ),
        (
            "edit",
            json!({"path": "a.txt", "edits": [{"old_string": "a", "new": "b"}]}),
            "unknown field",
        ),
        ("grep", json!({"pattern": "("}), "invalid pattern"),
        (
            "grep",
            json!({"pattern": "a", "output_mode": "lines"}),
            "invalid output_mode",
        ),
        ("glob", json!({"pattern": ""}), "invalid pattern"),
        (
            "glob",
            json!({"pattern": "[", "path": "."}),
            "invalid pattern",
        ),
    ];
    for (tool, args, needle) in cases {
        let e = err(rig.call(&me, tool, args.clone()).await);
        assert_eq!(e.code, "invalid_arguments", "{tool} {args}: {e}");
        assert!(e.message.contains(needle), "{tool} {args}: {e}");
    }
    assert_eq!(rig.file("a.txt"), "a\n");
    let names: Vec<String> = std::fs::read_dir(rig.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["a.txt"]);
}

#[tokio::test]
async fn each_tool_s_name_is_its_schema_s() {
    let rig = Rig::new().await;
    let tools = rig
        .runtime
        .scope()
        .require::<dyn dsh_tools::ToolRegistry>()
        .unwrap()
        .snapshot();
    for name in tools.names() {
        let tool = tools.get(name).unwrap();
        assert_eq!(tool.name(), tool.schema().name);
        assert_eq!(tool.name(), name);
    }
    assert_eq!(tools.len(), 5);
}
