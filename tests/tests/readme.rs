//! The README's quick start is exactly two commands, and the first one works as written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};

fn quick_start(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Set up") || s.starts_with("安装与运行"))
        .unwrap();
    let block = section
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    block
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_quick_start_is_two_commands_in_both_languages_and_the_demo_runs_as_written() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let english = quick_start(&std::fs::read_to_string(root.join("README.md")).unwrap());
    let chinese = quick_start(&std::fs::read_to_string(root.join("README.zh.md")).unwrap());
    assert_eq!(english, chinese);
    assert_eq!(
        english,
        [
            "cargo run --release -p dsh -- run --replay demo \"Take a quick look at this directory and tell me what you find.\"",
            "cargo xtask ci",
        ]
    );
    // The demo, with the arguments after `--`, as the built binary runs them.
    let sandbox = Sandbox::new();
    let out = sandbox
        .dsh([
            "run",
            "--replay",
            "demo",
            "Take a quick look at this directory and tell me what you find.",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("DEEPSEEK_API_KEY"),
        "it says how to go live"
    );
}
