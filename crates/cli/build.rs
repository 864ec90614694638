//! Records the git short hash for `dsh --version`, or `unknown` when git is not available.

fn main() {
    let hash = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=DSH_GIT_HASH={hash}");
    println!("cargo:rerun-if-changed=../../.git/HEAD");
}
