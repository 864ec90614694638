//! The official ACP TypeScript client drives the built `dsh acp` (`tests/acp-peer/`, run with
//! `node --test`). Without node or its installed packages the test is skipped with a warning;
//! when `CI` is set it fails instead, so CI cannot pass without the official peer having run.
//! The MCP scenario hands it the in-repo MCP test server (`src/bin/mcp-fault-server.rs`).
//! Every scenario runs twice: with the sessions in files, and in PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use dsh_e2e::{acp_peer_dir, binary};

#[test]
fn the_official_typescript_client_completes_every_scenario() {
    every_scenario(None);
}

/// The same scenarios with the sessions in PostgreSQL: `dsh acp` works unchanged over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_typescript_client_completes_every_scenario_over_postgresql() {
    let Some(url) = dsh_test_providers::postgres::fresh_database().await else {
        return;
    };
    tokio::task::spawn_blocking(move || every_scenario(Some(&url)))
        .await
        .unwrap();
}

fn every_scenario(sessions_url: Option<&str>) {
    let Some(peer) = acp_peer_dir("@agentclientprotocol/sdk/package.json") else {
        return;
    };
    let mut node = Command::new("node");
    if let Some(url) = sessions_url {
        node.env("DSH_PEER_SESSIONS_URL", url);
    }
    let out = node
        .arg("--test")
        .current_dir(&peer)
        .env("DSH_BIN", binary())
        .env(
            "DSH_MCP_FAULT_SERVER",
            env!("CARGO_BIN_EXE_mcp-fault-server"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("# pass 13"), "{stdout}");
}
