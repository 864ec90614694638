//! Seam role: provider of `dsh_shell::ShellExecutor` — commands run as local `bash -c`
//! processes.
//!
//! Invariants this crate holds:
//! - Each command runs non-login, non-interactive, leading its own process group and without
//!   a controlling terminal (in a new session when dsh has one; otherwise on the standard
//!   library's posix_spawn path, which does not fork), its stdout and stderr one merged pipe,
//!   with credentials scrubbed from its environment.
//! - Every termination is of the whole group: SIGTERM and SIGCONT, then SIGKILL after the
//!   grace if members remain; never a signal to a group once it was seen gone.
//! - No process a task started outlives it: stragglers left in the group are terminated after
//!   a bounded drain, and descendants that left the group are found (dsh is a child subreaper
//!   on Linux; each child carries a marker variable), SIGKILLed and reaped by pid. The RFC
//!   says what stays out of reach.
//! - Output is kept as bytes: a ring of exactly the last `output_cap` bytes and a capped
//!   private spill file of the stream's head; never decoded here.
//! - With a watchdog configured, what a task started is ended even when dsh is SIGKILLed: a
//!   small process that outlives dsh ends it when its pipe from dsh closes (`watchdog`).
//! - A process started elsewhere and enrolled (`dsh_shell::ProcessContainment`, an MCP
//!   server) carries a marker of this executor's family: disposal and the watchdog end it and
//!   its escapees like a task's, and a release ends them at once.
//! - A sandboxed request runs confined or not at all: through the sandbox helper (`sandbox`),
//!   which keeps each writable root's `.git/hooks` and `.git/config` read-only where the
//!   kernel allows a mount namespace (`git_guard`), confines itself with Landlock and seccomp
//!   and `exec`s the shell; when this machine cannot confine, the request is refused with
//!   `ShellError::Sandbox`. An enrolled process may be started through it too
//!   (`ProcessContainment::confine`).
//! - Each task has one async supervisor on the runtime captured at construction; the executor
//!   holds no scope. [`LocalShellExecutor::dispose`] ends and awaits every task; dropping an
//!   undisposed executor SIGKILLs every live group.
//!
//! Design and limits: docs/rfc/implemented/architecture/2026-11-30-shell-executor-ownership.md.
#![deny(missing_docs)]

mod config;
mod containment;
mod escapees;
mod executor;
mod git_guard;
mod group;
mod inner;
mod listeners;
mod ops;
mod output;
mod plugin;
mod procfs;
pub mod sandbox;
#[doc(hidden)]
pub mod signal;
mod spawn;
mod spill;
mod supervisor;
mod table;
mod task;
pub mod watchdog;

pub use config::{LocalConfigError, LocalShellConfig};
pub use executor::LocalShellExecutor;
pub use plugin::ShellLocalPlugin;
