//! Processes dsh starts outside the executor — an MCP server — held to the executor's
//! promise that nothing a tool started outlives dsh.
//!
//! A process started elsewhere is *enrolled*: it gets an environment entry that it and every
//! descendant keeping its environment carry, even one that left its process group or started
//! a session of its own. The provider ends everything carrying the entry when the starter
//! releases it, when the executor is disposed, and — through its watchdog — after dsh itself
//! was SIGKILLed.

use std::ffi::OsString;

use async_trait::async_trait;

use crate::SandboxPolicy;

/// A command line that starts a program confined, and the variables it needs set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confined {
    /// The program first, then its arguments (the sandbox helper's, then the command's).
    pub argv: Vec<OsString>,
    /// Variables to set for it (its private temporary directory).
    pub env: Vec<(OsString, OsString)>,
}

/// The environment entry that marks an enrolled process and its descendants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enrolment {
    /// The variable's name.
    pub var: String,
    /// Its value, unique to this enrolment.
    pub value: String,
}

/// Ends what processes started outside the executor leave behind.
#[async_trait]
pub trait ProcessContainment: Send + Sync + 'static {
    /// A new enrolment; `label` names the starter in logs (`mcp-<server>`). The starter puts
    /// the entry in the environment of the process it starts.
    fn enrol(&self, label: &str) -> Enrolment;

    /// Ends every live process carrying `enrolment` (with SIGKILL) and returns once none is
    /// left or a bound passed. For a starter that ended its process: what it started and
    /// what escaped its group go too. `leader`, the process the starter spawned itself, is
    /// ended but left for the starter to reap.
    async fn release(&self, enrolment: &Enrolment, leader: Option<u32>);

    /// The command line that starts `argv` confined by `policy`, as a sandboxed command is;
    /// `Err` says why it cannot be here, and the starter must then not start it at all. The
    /// default: no sandbox is offered.
    fn confine(&self, policy: &SandboxPolicy, argv: Vec<OsString>) -> Result<Confined, String> {
        let _ = (policy, argv);
        Err("this executor offers no sandbox".into())
    }
}
