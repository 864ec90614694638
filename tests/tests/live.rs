//! The one test that talks to DeepSeek itself. It is ignored by default and runs only with
//! `DSH_LIVE_TESTS=1` and `DEEPSEEK_API_KEY` set:
//! `DSH_LIVE_TESTS=1 cargo test -p dsh-e2e --test live -- --ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use dsh_e2e::{Sandbox, text};

const DEMO_PROMPT: &str = "Take a quick look at this directory and tell me what you find.";

#[test]
#[ignore = "talks to api.deepseek.com: set DSH_LIVE_TESTS=1 and DEEPSEEK_API_KEY"]
fn the_readme_prompt_against_deepseek_completes_with_a_tool_call() {
    if std::env::var("DSH_LIVE_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: DSH_LIVE_TESTS is not 1");
        return;
    }
    let key = std::env::var("DEEPSEEK_API_KEY").expect("DSH_LIVE_TESTS=1 needs DEEPSEEK_API_KEY");
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.work().join("notes.txt"), "live test\n").unwrap();
    let out = sandbox
        .dsh(["run", "--json", DEMO_PROMPT])
        .env("DEEPSEEK_API_KEY", key)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{stdout}",
        text(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.iter().any(|l| l["type"] == "tool_call"),
        "no tool call in:\n{stdout}"
    );
    assert_eq!(lines.last().unwrap()["type"], "turn_end", "{stdout}");
}
