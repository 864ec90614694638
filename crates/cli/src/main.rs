//! Seam role: root — the `dsh` binary: reads configuration, picks one provider per seam, loads
//! the plugins in order and runs a front end (`dsh run`, `dsh acp`, `dsh sessions`).
//!
//! The only crate besides the test suites that names providers (architecture invariant 4), and
//! the only one whose human output may go to stdout (invariant 6). It exits by shutting the
//! runtime down, so every session log is closed on every exit path except SIGKILL.
//!
//! Status: the command-line interface is not implemented yet. Until its issue lands, every
//! invocation reports that plainly on stderr and exits with status 2.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "dsh {}: unsupported: no command is available yet; `dsh run`, `dsh acp` and \
         `dsh sessions` arrive with the command-line issue",
        env!("CARGO_PKG_VERSION")
    );
    ExitCode::from(2)
}
