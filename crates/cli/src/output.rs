//! The one writer to stdout. Architecture invariant 6 gives stdout to ACP frames and to the
//! human (and `--json`) output of the commands; everything else — logs, progress, errors —
//! goes to stderr. Clippy's `disallowed_methods` (`clippy.toml`) refuses `std::io::stdout` and
//! `tokio::io::stdout` everywhere, and `print_stdout` refuses `print!`; the one `#[allow]` for
//! both is on `raw` below, so a new stdout writer anywhere else breaks the build.

use std::io::{IsTerminal, Write};

#[allow(clippy::disallowed_methods)]
mod raw {
    /// Stdout for the commands' output.
    pub fn stdout() -> std::io::Stdout {
        std::io::stdout()
    }

    /// Stdout for `dsh acp`'s frames, written by the bridge's one writer task.
    pub fn acp_stdout() -> tokio::io::Stdout {
        tokio::io::stdout()
    }
}

pub use raw::acp_stdout;

/// Writes `bytes` and flushes; an error means stdout was closed under dsh (`| head`).
pub fn write(bytes: &[u8]) -> std::io::Result<()> {
    let mut stdout = raw::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush())
}

/// Whether stdout is a terminal (what it shows, and whether colour is on, depends on it).
pub fn is_terminal() -> bool {
    raw::stdout().is_terminal()
}
