//! `grep` and `glob`.

use serde_json::json;

use dsh_tool_fs::ToolFsConfig;

use crate::support::*;

fn tree(rig: &Rig) {
    write(rig.root().join(".gitignore"), "target/\n*.log\n");
    write(
        rig.root().join("src/lib.rs"),
        "pub fn alpha() {}\npub fn beta() {}\n",
    );
    write(
        rig.root().join("src/deep/mod.rs"),
        "// alpha here\nfn gamma() {}\n",
    );
    write(rig.root().join("target/out.rs"), "fn alpha() {}\n");
    write(rig.root().join("debug.log"), "alpha\n");
    write(rig.root().join("image.bin"), b"alpha\0\0binary");
    write(rig.root().join("README.md"), "Alpha\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_honours_gitignore_skips_binaries_and_gives_path_line_text() {
    let rig = Rig::new().await;
    tree(&rig);
    let me = rig.caller();
    let out = ok(rig.call(&me, "grep", json!({"pattern": "alpha"})).await);
    assert_eq!(
        out.content,
        "src/deep/mod.rs:1:// alpha here\nsrc/lib.rs:1:pub fn alpha() {}"
    );
    assert_eq!(
        out.meta.unwrap()["summary"],
        "grep alpha: 2 matches in 2 files"
    );
    let out = ok(rig
        .call(&me, "grep", json!({"pattern": "alpha", "case_insensitive": true, "output_mode": "files_with_matches"}))
        .await);
    assert_eq!(out.content, "README.md\nsrc/deep/mod.rs\nsrc/lib.rs");
    let out = ok(rig
        .call(
            &me,
            "grep",
            json!({"pattern": "fn", "output_mode": "count", "glob": "*.rs"}),
        )
        .await);
    assert_eq!(out.content, "src/deep/mod.rs:1\nsrc/lib.rs:2");
    let out = ok(rig
        .call(
            &me,
            "grep",
            json!({"pattern": "beta", "context": 1, "type": "rust"}),
        )
        .await);
    assert_eq!(
        out.content,
        "src/lib.rs-1-pub fn alpha() {}\nsrc/lib.rs:2:pub fn beta() {}"
    );
    let out = ok(rig.call(&me, "grep", json!({"pattern": "zeta"})).await);
    assert_eq!(out.content, "No matches for \"zeta\".");
    let e = err(rig
        .call(&me, "grep", json!({"pattern": "a", "type": "nosuchtype"}))
        .await);
    assert!(e.message.contains("invalid type"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_over_ten_thousand_files_is_capped_with_a_note() {
    let rig = Rig::new().await;
    for i in 0..10_000 {
        write(
            rig.root().join(format!("d{}/f{i}.txt", i % 100)),
            format!("needle {i}\n"),
        );
    }
    let me = rig.caller();
    let out = ok(rig.call(&me, "grep", json!({"pattern": "needle"})).await);
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 201);
    assert!(lines[200].starts_with("[Showing 200 of"), "{}", lines[200]);
    assert!(
        lines[200].contains("10000 matches in 10000 files"),
        "{}",
        lines[200]
    );
    let out = ok(rig
        .call(&me, "grep", json!({"pattern": "needle 9999$", "limit": 5}))
        .await);
    assert_eq!(out.content, "d99/f9999.txt:1:needle 9999");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_lists_newest_first_honours_gitignore_and_caps() {
    let rig = Rig::new().await;
    tree(&rig);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(rig.root().join("src/lib.rs"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let me = rig.caller();
    let out = ok(rig.call(&me, "glob", json!({"pattern": "**/*.rs"})).await);
    assert_eq!(out.content, "src/deep/mod.rs\nsrc/lib.rs");
    let out = ok(rig
        .call(&me, "glob", json!({"pattern": "*.rs", "path": "src"}))
        .await);
    assert_eq!(out.content, "src/lib.rs", "`*` stays within a directory");
    let out = ok(rig.call(&me, "glob", json!({"pattern": "*.py"})).await);
    assert!(
        out.content.starts_with("No files match \"*.py\""),
        "{}",
        out.content
    );
    for i in 0..250 {
        write(rig.root().join(format!("many/{i}.txt")), "");
    }
    let out = ok(rig
        .call(&me, "glob", json!({"pattern": "many/*.txt"}))
        .await);
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 201);
    assert_eq!(
        lines[200],
        "[Showing the 200 newest of 250 files. Narrow the pattern or the path.]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_out_of_time_reports_what_it_found_and_a_cancelled_one_says_so() {
    let config = ToolFsConfig {
        search_timeout: std::time::Duration::ZERO,
        ..ToolFsConfig::default()
    };
    let rig = Rig::with(config).await;
    tree(&rig);
    let me = rig.caller();
    for (tool, args) in [
        ("grep", json!({"pattern": "alpha"})),
        ("glob", json!({"pattern": "**/*.rs"})),
    ] {
        let out = ok(rig.call(&me, tool, args.clone()).await);
        assert!(
            out.content
                .contains("stopped after 0 s, its time limit: only what it found by then"),
            "{tool}: {}",
            out.content
        );
        let token = dsh_kernel::CancellationToken::new();
        token.cancel();
        let e = err(rig.call_with(me.cx_cancelled_by(token), tool, args).await);
        assert_eq!(e.code, "cancelled", "{tool}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pattern_too_large_to_compile_is_refused_at_once() {
    let rig = Rig::new().await;
    write(rig.root().join("long.txt"), "a".repeat(1 << 20));
    let me = rig.caller();
    let e = err(rig
        .call(&me, "grep", json!({"pattern": "((a{100}){100}){100}"}))
        .await);
    assert_eq!(e.code, "invalid_arguments");
    assert!(e.message.contains("10 MiB limit"), "{e}");
}
