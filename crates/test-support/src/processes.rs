//! Process checks for tests that start real process trees: unique markers to put in every
//! process's argv, `/proc` scans for what is still alive (zombies count as gone), and polling
//! with a deadline far beyond any grace a suite configures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A number no other call in this process returns, for `sleep 1000.<marker>` style argv.
pub fn marker() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!(
        "{}{:04}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .expect("/proc is readable")
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
}

/// True when `pid` is gone or a zombie.
pub fn zombie_or_absent(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Pids of live processes whose argv contains `needle`.
pub fn alive(needle: &str) -> Vec<i32> {
    pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                && !zombie_or_absent(*pid)
        })
        .collect()
}

/// How many live processes run exactly `sleep 1000.<m>`: a tree's members, not its leader
/// (whose command text holds the marker too).
pub fn sleepers(m: &str) -> usize {
    let argv = format!("sleep\u{0}1000.{m}\u{0}");
    pids()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == argv.as_bytes())
                && !zombie_or_absent(*pid)
        })
        .count()
}

/// What is alive with `needle`, for failure messages.
pub fn describe(needle: &str) -> String {
    alive(needle)
        .iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            format!(
                "{stat} :: {}\n",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            )
        })
        .collect()
}

/// Polls until `condition` holds; panics after 15 s naming `what`.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until no live process has `needle` in its argv.
pub async fn all_gone(needle: &str) {
    eventually(&format!("no process with {needle:?} in its argv"), || {
        alive(needle).is_empty()
    })
    .await;
}
