//! `edit`.

use serde_json::json;

use crate::support::*;

const SOURCE: &str = "fn main() {\n    let x = 1;\n    let y = x;\n    println!(\"{y}\");\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_replaces_one_exact_match_and_reports_the_changed_region() {
    let rig = Rig::new().await;
    write(rig.root().join("main.rs"), SOURCE);
    let me = rig.caller();
    ok(rig.call(&me, "read", json!({"path": "main.rs"})).await);
    let out = ok(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        )
        .await);
    assert_eq!(rig.file("main.rs"), SOURCE.replace("= 1", "= 2"));
    assert!(
        out.content
            .starts_with("edited main.rs: 1 replacement at line 2."),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("     2\t    let x = 2;"),
        "{}",
        out.content
    );
    let meta = out.meta.unwrap();
    assert_eq!(meta["first_line"], 1);
    assert!(meta["old_text"].as_str().unwrap().contains("let x = 1;"));
    assert!(meta["new_text"].as_str().unwrap().contains("let x = 2;"));
    assert!(meta["path"].as_str().unwrap().ends_with("/main.rs"));
    // The session's own edit counts as read: a second edit needs no new read.
    ok(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "let y = x;", "new_string": "let y = x + 1;"}),
        )
        .await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ambiguous_and_absent_strings_are_refused_with_where_to_look() {
    let rig = Rig::new().await;
    write(rig.root().join("main.rs"), SOURCE);
    let me = rig.caller();
    ok(rig.call(&me, "read", json!({"path": "main.rs"})).await);
    let e = err(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "let", "new_string": "const"}),
        )
        .await);
    assert_eq!(e.code, "no_match");
    assert!(
        e.message
            .contains("matches 2 times in main.rs (at lines 2, 3)"),
        "{e}"
    );
    let e = err(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "let x = 1;\nlet y = x;", "new_string": "z"}),
        )
        .await);
    assert!(e.message.contains("only in whitespace"), "{e}");
    assert!(e.message.contains("     2\t    let x = 1;"), "{e}");
    let e = err(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "unrelated", "new_string": "z"}),
        )
        .await);
    assert!(e.message.contains("was not found in main.rs"), "{e}");
    assert_eq!(rig.file("main.rs"), SOURCE);
    let out = ok(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "old_string": "let", "new_string": "const", "replace_all": true}),
        )
        .await);
    assert!(
        out.content.starts_with("edited main.rs: 2 replacements"),
        "{}",
        out.content
    );
    assert_eq!(rig.file("main.rs").matches("const").count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_edits_apply_together_or_not_at_all() {
    let rig = Rig::new().await;
    write(rig.root().join("main.rs"), SOURCE);
    let me = rig.caller();
    ok(rig.call(&me, "read", json!({"path": "main.rs"})).await);
    let e = err(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "edits": [
                {"old_string": "let x = 1;", "new_string": "let x = 5;"},
                {"old_string": "missing", "new_string": "z"}
            ]}),
        )
        .await);
    assert!(
        e.message.starts_with("old_string (edit 2) was not found"),
        "{e}"
    );
    assert_eq!(
        rig.file("main.rs"),
        SOURCE,
        "the first edit was not written alone"
    );
    ok(rig
        .call(
            &me,
            "edit",
            json!({"path": "main.rs", "edits": [
                {"old_string": "let x = 1;", "new_string": "let x = 5;"},
                {"old_string": "let y = x;", "new_string": "let y = x * 2;"}
            ]}),
        )
        .await);
    assert!(
        rig.file("main.rs")
            .contains("let x = 5;\n    let y = x * 2;")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_needs_a_read_and_a_file_unchanged_since() {
    let rig = Rig::new().await;
    write(rig.root().join("main.rs"), SOURCE);
    let me = rig.caller();
    let args = json!({"path": "main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"});
    let e = err(rig.call(&me, "edit", args.clone()).await);
    assert_eq!(e.code, "not_read");
    assert!(e.message.contains("read it first"), "{e}");
    ok(rig.call(&me, "read", json!({"path": "main.rs"})).await);
    write(
        rig.root().join("main.rs"),
        format!("// changed by someone\n{SOURCE}"),
    );
    let e = err(rig.call(&me, "edit", args.clone()).await);
    assert_eq!(e.code, "stale");
    assert!(e.message.contains("changed since you last read it"), "{e}");
    assert!(rig.file("main.rs").starts_with("// changed by someone"));
    ok(rig.call(&me, "read", json!({"path": "main.rs"})).await);
    ok(rig.call(&me, "edit", args).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_keeps_crlf_line_endings() {
    let rig = Rig::new().await;
    write(rig.root().join("win.txt"), "one\r\ntwo\r\nthree\r\n");
    let me = rig.caller();
    let out = ok(rig.call(&me, "read", json!({"path": "win.txt"})).await);
    assert!(!out.content.contains('\r'));
    ok(rig
        .call(
            &me,
            "edit",
            json!({"path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3"}),
        )
        .await);
    assert_eq!(rig.file("win.txt"), "one\r\n2\r\n3\r\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_keeps_how_the_file_ends_and_a_missing_file_points_to_write() {
    let rig = Rig::new().await;
    let me = rig.caller();
    for (stored, old, new, after) in [
        ("a\nlast\n", "last\n", "end", "a\nend\n"),
        ("a\nlast", "last", "end\n", "a\nend"),
    ] {
        write(rig.root().join("f.txt"), stored);
        ok(rig.call(&me, "read", json!({"path": "f.txt"})).await);
        ok(rig
            .call(
                &me,
                "edit",
                json!({"path": "f.txt", "old_string": old, "new_string": new}),
            )
            .await);
        assert_eq!(rig.file("f.txt"), after, "{stored:?}");
    }

    let e = err(rig
        .call(
            &me,
            "edit",
            json!({"path": "calc.py", "old_string": "x", "new_string": "y"}),
        )
        .await);
    assert_eq!(e.code, "not_found");
    assert!(e.message.contains("call `write`"), "{e}");
    assert!(!e.message.contains("glob"), "{e}");
}
