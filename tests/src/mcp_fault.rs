//! The MCP fault server's reports (`src/bin/mcp-fault-server.rs`): a Unix socket the server
//! writes a line to as something happens, so a test waits on events, never on time.

use std::io::Read;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

/// The variable that tells the fault server where to report.
pub const REPORT_VAR: &str = "MCP_FAULT_REPORT";

/// A socket collecting the fault server's reports.
pub struct FaultReports {
    path: PathBuf,
    lines: mpsc::UnboundedReceiver<String>,
    _dir: tempfile::TempDir,
}

impl FaultReports {
    /// Listens on a fresh socket.
    pub fn new() -> FaultReports {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
        let path = dir.path().join("reports.sock");
        let listener =
            UnixListener::bind(&path).unwrap_or_else(|e| panic!("binding the report socket: {e}"));
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut text = String::new();
                let _ = stream.read_to_string(&mut text);
                for line in text.lines() {
                    if tx.send(line.to_owned()).is_err() {
                        return;
                    }
                }
            }
        });
        FaultReports {
            path,
            lines,
            _dir: dir,
        }
    }

    /// The socket's path, for [`REPORT_VAR`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next report `what` (`started`, `hang`, `cancelled`, `crash`), skipping
    /// others, and answers the reporting process's id; panics after 30 s (a hang detector).
    pub async fn wait_for(&mut self, what: &str) -> i32 {
        let next = async {
            while let Some(line) = self.lines.recv().await {
                if let Some((kind, pid)) = line.split_once(' ')
                    && kind == what
                {
                    return pid
                        .parse()
                        .unwrap_or_else(|_| panic!("not a process id: {line}"));
                }
            }
            panic!("the report socket closed before `{what}`")
        };
        tokio::time::timeout(Duration::from_secs(30), next)
            .await
            .unwrap_or_else(|_| panic!("no `{what}` report within 30 s"))
    }

    /// The reports that arrived so far, without waiting.
    pub fn so_far(&mut self) -> Vec<String> {
        std::iter::from_fn(|| self.lines.try_recv().ok()).collect()
    }
}

impl Default for FaultReports {
    fn default() -> Self {
        FaultReports::new()
    }
}
