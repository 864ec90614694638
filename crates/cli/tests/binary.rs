//! The built binary answers for itself. Also why this suite exists: with an integration test in
//! the package, `cargo test --workspace` builds `target/debug/dsh` with the same features as
//! everything else it builds, so the end-to-end suites' `binary()` finds it up to date instead
//! of compiling the binary's dependencies a second time with another feature set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn the_binary_names_its_version_and_refuses_an_unknown_command() {
    let dsh = env!("CARGO_BIN_EXE_dsh");
    let version = Command::new(dsh).arg("--version").output().unwrap();
    assert!(version.status.success());
    let text = String::from_utf8_lossy(&version.stdout);
    assert!(
        text.starts_with(&format!("dsh {} (", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    let unknown = Command::new(dsh).arg("no-such-command").output().unwrap();
    assert_eq!(unknown.status.code(), Some(2), "a usage error");
    assert!(unknown.stdout.is_empty(), "errors never go to stdout");
}
