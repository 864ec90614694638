//! Seam role: support — the workspace end-to-end suites: they drive the built `dsh` binary over
//! stdio, with real bash processes, real files in temporary directories and a real HTTP server
//! speaking the model wire format.
//!
//! Every run gets a clean environment: a temporary `HOME`, no inherited `DSH_*`, XDG or key
//! variables, so a developer's own configuration or key can never leak into a test.
#![deny(missing_docs)]

pub mod acp;
pub mod mcp_fault;
pub mod pty;
pub mod tui;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The `dsh` binary of this build, built once per test process so it is never stale.
pub fn binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        // Benchmarks run from target/release and measure the release binary.
        let exe = std::env::current_exe().unwrap_or_default();
        let release = exe
            .parent()
            .and_then(Path::parent)
            .is_some_and(|dir| dir.ends_with("release"));
        let mut build = Command::new(cargo);
        // The same selection as `cargo test --workspace` (bins and tests of every member), so
        // the features unify the same way and, after that command, this build has nothing to
        // do: `-p dsh` alone resolves other features and compiled every dependency a second
        // time (about a minute, charged to whichever test came first). Benchmarks build the
        // release binary alone.
        if release {
            build.args(["build", "--quiet", "-p", "dsh", "--bin", "dsh", "--release"]);
        } else {
            build.args(["build", "--quiet", "--workspace", "--bins", "--tests"]);
        }
        // What cargo sets for a running test must not reach the nested build: some build
        // scripts (ring's) rerun when `CARGO_MANIFEST_DIR` changes, so a leaked one rebuilt the
        // TLS stack, and everything above it, on every test binary and again on the next
        // `cargo test`.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let set_for_tests = [
                "CARGO_MANIFEST_",
                "CARGO_PKG_",
                "CARGO_BIN_",
                "CARGO_CRATE_",
            ]
            .iter()
            .any(|prefix| key.starts_with(prefix))
                || key == "CARGO_PRIMARY_PACKAGE"
                || key == "CARGO_TARGET_TMPDIR";
            if set_for_tests {
                build.env_remove(key.as_ref());
            }
        }
        let status = build.status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "building the dsh binary failed"
        );
        // …/target/<profile>/deps/<test> → …/target/<profile>/dsh
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        profile_dir.join("dsh")
    })
}

/// A sandbox for one test: a home, a data directory and a working directory.
pub struct Sandbox {
    /// Holds everything; removed on drop.
    pub root: tempfile::TempDir,
}

impl Sandbox {
    /// A fresh sandbox with an empty working directory.
    pub fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        for dir in ["home", "work"] {
            std::fs::create_dir_all(root.path().join(dir))
                .unwrap_or_else(|e| panic!("mkdir {dir}: {e}"));
        }
        Sandbox { root }
    }

    /// The working directory commands run in.
    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// `--data-dir` of every run.
    pub fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    /// `dsh <args>` in the working directory, with a clean environment and the sandbox's
    /// data directory.
    pub fn dsh<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.in_sandbox(Command::new(binary()), args)
    }

    /// `dsh --base-url <base_url> --model m run <args…>` against a keyless OpenAI-compatible
    /// server (a test's mock model server).
    pub fn run_against(&self, base_url: &str, args: &[&str]) -> Command {
        let mut all = vec!["--base-url", base_url, "--model", "m", "run"];
        all.extend_from_slice(args);
        let mut command = self.dsh(&all);
        command.env("DSH_API_KEY_ENV", "");
        command
    }

    /// `dsh <args>` as [`Sandbox::dsh`] starts it, in a new session of its own
    /// (`setsid`), so it has no controlling terminal even when the tests have one.
    pub fn dsh_without_terminal<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut setsid = Command::new("setsid");
        setsid.arg("--wait").arg(binary());
        self.in_sandbox(setsid, args)
    }

    fn in_sandbox<I, S>(&self, mut command: Command, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        command
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.root.path().join("home"))
            .env("DSH_DATA_DIR", self.data())
            .env("TERM", "dumb")
            .args(args)
            .stdin(Stdio::null());
        command
    }

    /// Writes a replay script with these entries to the sandbox; returns its path for
    /// `--replay`.
    pub fn script(&self, name: &str, entries: serde_json::Value) -> String {
        let path = self.root.path().join(format!("{name}.json"));
        let script = serde_json::json!({"version": 1, "name": name, "entries": entries});
        std::fs::write(&path, script.to_string()).unwrap_or_else(|e| panic!("write script: {e}"));
        path.display().to_string()
    }

    /// The id of the first session log found (most tests store exactly one).
    pub fn first_session_id(&self) -> String {
        let logs = self.logs();
        let log = logs
            .first()
            .unwrap_or_else(|| panic!("no session log was stored"));
        log.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Every session log under the data directory.
    pub fn logs(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let Ok(projects) = std::fs::read_dir(self.data().join("sessions")) else {
            return found;
        };
        for project in projects.flatten() {
            for file in std::fs::read_dir(project.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                // Hidden files beside the logs (the listing index) are not logs.
                let hidden = file.file_name().to_string_lossy().starts_with('.');
                if !hidden && file.path().extension().is_some_and(|e| e == "jsonl") {
                    found.push(file.path());
                }
            }
        }
        found
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new()
    }
}

/// Runs `command` to completion, feeding `stdin`.
pub fn run_with_stdin(mut command: Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("spawn dsh: {e}"));
    if let Some(mut input) = child.stdin.take() {
        // A refused oversized prompt may close stdin early; that is not a test failure.
        let _ = input.write_all(stdin);
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait for dsh: {e}"))
}

/// The text of an output stream.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The text of the first user message of a chat-completions request body.
pub fn first_user_text(request: &serde_json::Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no user message in {request}"))
        .to_owned()
}

/// `tests/acp-peer`, when node and the package `marker` (a path under `node_modules`) are
/// installed there. Without them a test is skipped with a warning, except under `CI`, where
/// it fails: CI cannot pass without the peers having run.
pub fn acp_peer_dir(marker: &str) -> Option<PathBuf> {
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("acp-peer");
    let installed = peer.join("node_modules").join(marker).exists();
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if installed && node {
        return Some(peer);
    }
    let why = if node {
        "run `npm ci` in tests/acp-peer"
    } else {
        "node is not installed"
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "the ACP peers must run in CI: {why}"
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!("warning: skipping an ACP peer test: {why}");
    }
    None
}

/// The MCP reference server's entry point (`tests/mcp-servers`), when node and the package
/// are installed; skipped otherwise with a warning, except under `CI`, where it fails.
pub fn mcp_reference_server() -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if script.is_file() && node {
        return Some(script);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the MCP reference server must run in CI: run `npm ci` in tests/mcp-servers"
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "warning: skipping an MCP reference server test: run `npm ci` in tests/mcp-servers"
        );
    }
    None
}

/// The MCP reference server serving streamable HTTP on a free port of 127.0.0.1, started
/// from `script` and ready (it said it listens). Dropping it ends the server.
pub struct ReferenceHttp {
    child: std::process::Child,
    /// Its MCP endpoint.
    pub url: String,
}

impl ReferenceHttp {
    /// Starts the server and waits for its "listening" line.
    pub fn start(script: &Path) -> ReferenceHttp {
        use std::io::BufRead;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("a free port: {e}"));
        let child = Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the reference server: {e}"));
        let mut server = ReferenceHttp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
        };
        let Some(stderr) = server.child.stderr.take() else {
            panic!("the reference server's stderr");
        };
        // Its stderr is read to its end, so the server never writes into a closed pipe.
        let (listening, heard) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if line.contains("listening on port") {
                    let _ = listening.send(());
                }
            }
        });
        assert!(
            heard.recv().is_ok(),
            "the reference server ended before it listened"
        );
        server
    }

    /// Ends the server and waits until it is gone.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ReferenceHttp {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every process whose environment holds `marker` (`NAME=value`): what a test started,
/// however far it was detached (a daemon, a child in its own process group).
pub fn marked_processes(marker: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
        })
        .collect()
}

/// Waits, on each one's pidfd (no polling), until every process holding `marker` is gone;
/// panics after 30 s.
pub fn wait_gone(marker: &str) {
    for pid in marked_processes(marker) {
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            continue;
        };
        let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
            continue;
        };
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let limit = rustix::event::Timespec {
            tv_sec: 30,
            tv_nsec: 0,
        };
        let ready = rustix::event::poll(&mut fds, Some(&limit)).unwrap_or(0);
        assert_eq!(ready, 1, "process {pid:?} did not end within 30 s");
    }
    assert!(marked_processes(marker).is_empty());
}

/// [`wait_gone`] for an async test: waits off the runtime's worker threads.
pub async fn gone(marker: String) {
    let waited = tokio::task::spawn_blocking(move || wait_gone(&marker)).await;
    if let Err(panicked) = waited {
        std::panic::resume_unwind(panicked.into_panic());
    }
}

/// A benchmark's samples as `p50 …, p99 … (n runs)`.
pub fn percentiles(mut samples: Vec<std::time::Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    format!(
        "p50 {:?}, p99 {:?} ({} runs)",
        at(0.5),
        at(0.99),
        samples.len()
    )
}

/// A mock model server answering each request with what `respond` makes of its JSON body,
/// and every body it received, in order (a responder's bodies are otherwise not kept).
pub async fn recording_server(
    respond: impl Fn(&serde_json::Value) -> dsh_test_providers::mock_model::MockResponse
    + Send
    + Sync
    + 'static,
) -> (
    dsh_test_providers::mock_model::MockModelServer,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let server = dsh_test_providers::mock_model::MockModelServer::responding(move |request| {
        let body = request.json();
        let response = respond(&body);
        if let Ok(mut seen) = sink.lock() {
            seen.push(body);
        }
        response
    })
    .await;
    (server, seen)
}

/// The tool results a request carries back to the model, in order.
pub fn tool_results(request: &serde_json::Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}
