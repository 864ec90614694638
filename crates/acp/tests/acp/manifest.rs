//! The schema crate is pinned exactly, without features: minor releases add variants, and
//! the default feature only adds JSON-Schema derives.

use std::process::Command;

#[test]
fn the_schema_dependency_is_pinned_exactly_without_features() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let mut users = Vec::new();
    for package in packages {
        for dep in package["dependencies"].as_array().unwrap() {
            if dep["name"] == "agent-client-protocol-schema" {
                users.push(package["name"].as_str().unwrap().to_owned());
                assert_eq!(dep["req"], "=1.20.0");
                assert_eq!(dep["uses_default_features"], false);
                assert_eq!(dep["features"], serde_json::json!([]));
            }
            assert_ne!(
                dep["name"], "agent-client-protocol",
                "the SDK crate is not used"
            );
        }
    }
    assert_eq!(users, ["dsh-acp"]);
}
