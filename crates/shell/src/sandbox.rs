//! How much a command may touch: the sandbox policy every exec request carries.
//!
//! The provider applies it (the local executor with the kernel's Landlock and seccomp). A
//! provider that cannot apply a policy refuses the command with [`crate::ShellError::Sandbox`];
//! it never runs it with less confinement than asked.

use std::path::PathBuf;

/// What a command may write and reach. Reading is never confined: everything readable stays
/// readable (the threat model of the RFC "Trust: a sandbox and permission rules").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum SandboxPolicy {
    /// Nothing writable but `/dev/null` and the command's private temporary directory; no
    /// network.
    ReadOnly,
    /// These directories (the session's roots), the private temporary directory and the
    /// executor's spill directory writable; the network only when `network`.
    WorkspaceWrite {
        /// The directories written to, with everything under them.
        writable: Vec<PathBuf>,
        /// Whether the command may open network sockets (Unix sockets are always allowed).
        network: bool,
    },
    /// No sandbox: the command may do what dsh may.
    #[default]
    FullAccess,
}

impl SandboxPolicy {
    /// The policy's name, as the configuration and the command line spell it.
    pub fn name(&self) -> &'static str {
        match self {
            SandboxPolicy::ReadOnly => "read-only",
            SandboxPolicy::WorkspaceWrite { .. } => "workspace-write",
            SandboxPolicy::FullAccess => "full-access",
        }
    }
}
