//! A real PostgreSQL for tests: the one CI points them at (`DSH_TEST_POSTGRES_URL`, set by
//! `.ci/run`), else a private cluster this test process starts from the machine's
//! PostgreSQL binaries; a test that needs its own server (to restart it under a session)
//! starts a [`Cluster`]. Without either, a test skips with one line, except under `CI=true`,
//! where a missing PostgreSQL is a failure.
//!
//! A cluster lives in a temporary directory of its own: data, and the Unix socket (no TCP
//! port is opened). It runs as the `postgres` user when the tests run as root (PostgreSQL
//! refuses root), and a watchdog stops it when the test process ends, however it ends: a
//! shell waiting on a pipe only this process holds.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The socket's port number (only its file name: no TCP port is opened).
const PORT: &str = "5432";

/// A private PostgreSQL cluster.
pub struct Cluster {
    root: PathBuf,
    bin: PathBuf,
    owner: Option<(u32, u32)>,
    watchdog: Option<Child>,
    /// The process's shared cluster, never dropped: its watchdog removes its directory.
    shared: bool,
}

/// The directory of the machine's newest PostgreSQL binaries.
pub fn binaries() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DSH_TEST_POSTGRES_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(Path::file_name)
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop()
}

/// The URL tests use, or `None` (after one line saying why) when there is no PostgreSQL to
/// use; under `CI=true` that panics instead.
pub fn test_url() -> Option<String> {
    static SHARED: OnceLock<Option<(Cluster, String)>> = OnceLock::new();
    if let Ok(url) = std::env::var("DSH_TEST_POSTGRES_URL") {
        return Some(url);
    }
    let shared = SHARED.get_or_init(|| {
        binaries().map(|_| {
            let cluster = Cluster::start_shared(true);
            let url = cluster.url();
            (cluster, url)
        })
    });
    match shared {
        Some((_, url)) => Some(url.clone()),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!(
            "CI=true, but no PostgreSQL: DSH_TEST_POSTGRES_URL is not set (.ci/run sets it) \
             and no /usr/lib/postgresql/*/bin/initdb is installed"
        ),
        None => {
            eprintln!("skipped: no PostgreSQL (set DSH_TEST_POSTGRES_URL, or install PostgreSQL)");
            None
        }
    }
}

impl Cluster {
    /// Creates and starts a cluster in a fresh temporary directory.
    pub fn start() -> Cluster {
        Cluster::start_shared(false)
    }

    fn start_shared(shared: bool) -> Cluster {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let bin = binaries().expect("PostgreSQL binaries");
        let root = std::env::temp_dir().join(format!(
            "dsh-pg-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let owner = running_as_root().then(postgres_user);
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&root, Some(uid), Some(gid)).unwrap();
        }
        let mut cluster = Cluster {
            root,
            bin,
            owner,
            watchdog: None,
            shared,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "dsh",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        cluster.up();
        cluster
    }

    /// A libpq connection string for its `postgres` database as the superuser `dsh`.
    pub fn url(&self) -> String {
        format!(
            "host={} port={PORT} user=dsh dbname=postgres",
            self.root.display()
        )
    }

    /// Stops the server (fast: open connections are cut) and starts it again.
    pub fn restart(&mut self) {
        self.stop();
        self.up();
    }

    /// Starts a stopped server again, on the same socket with the same data.
    pub fn start_again(&mut self) {
        self.up();
    }

    /// Stops the server; what it committed stays.
    pub fn stop(&mut self) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]);
        if let Some(mut watchdog) = self.watchdog.take() {
            drop(watchdog.stdin.take());
            let _ = watchdog.wait();
        }
    }

    fn data(&self) -> String {
        self.root.join("data").display().to_string()
    }

    fn up(&mut self) {
        let data = self.data();
        let options = format!(
            "-k {} -p {PORT} -c listen_addresses= -c fsync=off -c max_connections=200",
            self.root.display()
        );
        let log = self.root.join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
        );
        // Stops the server once this process lets go of the pipe, however it ends.
        let pg_ctl = self.bin.join("pg_ctl");
        let mut watchdog = self.command("sh");
        watchdog
            .args([
                "-c",
                "cat >/dev/null; \"$0\" -D \"$1\" -m immediate stop >/dev/null 2>&1; \
                 [ -n \"$3\" ] && rm -rf \"$2\"",
            ])
            .arg(&pg_ctl)
            .arg(&data)
            .arg(&self.root)
            .arg(if self.shared { "remove" } else { "" })
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = watchdog.spawn().unwrap();
        // Nothing is ever written: the pipe is held open only.
        let _ = child.stdin.as_mut().map(|stdin| stdin.flush());
        self.watchdog = Some(child);
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.root);
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let output = self
            .command(self.bin.join(tool))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{tool} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.watchdog.is_some() {
            self.stop();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The `postgres` user's uid and gid.
fn postgres_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.first() == Some(&"postgres") && fields.len() > 3)
        .map(|fields| (fields[2].parse().unwrap(), fields[3].parse().unwrap()))
        .expect("a `postgres` user to run PostgreSQL as (it refuses root)")
}
