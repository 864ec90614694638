//! The official ACP TypeScript client drives the built `dsh acp` (`tests/acp-peer/`, run with
//! `node --test`). Without node or its installed packages the test is skipped with a warning;
//! when `CI` is set it fails instead, so CI cannot pass without the official peer having run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::process::Command;

use dsh_e2e::binary;

#[test]
fn the_official_typescript_client_completes_every_scenario() {
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("acp-peer");
    let installed = peer
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .is_file();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(installed && node) {
        let why = if node {
            "run `npm ci` in tests/acp-peer"
        } else {
            "node is not installed"
        };
        assert!(
            std::env::var_os("CI").is_none(),
            "the official ACP peer must run in CI: {why}"
        );
        eprintln!("warning: skipping the official ACP peer test: {why}");
        return;
    }
    let out = Command::new("node")
        .arg("--test")
        .current_dir(&peer)
        .env("DSH_BIN", binary())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("# pass 9"), "{stdout}");
}
