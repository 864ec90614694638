//! Seam role: consumer of `dsh_agent::AgentRegistry`, `dsh_session::SessionStore` and
//! `dsh_tools::ToolRegistry` — the Agent Client Protocol bridge over stdio JSON-RPC, so an
//! editor such as Zed drives dsh agents.
//!
//! The only crate that depends on the ACP schema crate (architecture invariant 5), with its
//! own tokio transport (why: `docs/rfc/implemented/architecture/2026-11-30-acp-bridge-transport.md`).
//!
//! Invariants:
//! - the output carries JSON-RPC frames only, one compact object per line, written by one
//!   writer task; diagnostics go to `tracing`;
//! - every request gets exactly one response, and every malformed input gets the right
//!   JSON-RPC error while the connection stays up;
//! - one agent per ACP session; all frames about a session leave through one ordered path,
//!   so a prompt's response follows every update of its turn, and every tool call reaches
//!   `completed` or `failed` before it;
//! - a prompt cancelled by the client is answered `cancelled` only once its turn has really
//!   stopped (or the cancel grace ran out);
//! - teardown runs once, whatever triggers it, and leaves no registered agent and no live
//!   session behind, within a deadline.
//!
//! Status: `initialize`, `authenticate`, `session/new`, `session/load` with replay,
//! `session/prompt`, `session/cancel`, `$/cancel_request` and `session/request_permission`
//! are served; other methods are answered "method not found".
#![deny(missing_docs)]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod conn;
mod content;
mod envelope;
mod files;
mod handlers;
mod live_session;
mod options;
mod outgoing;
mod path;
mod permission;
mod render;
mod reply;
mod request;
mod rpc;
mod serve;
mod state;
mod stop;
mod system_prompt;
mod transport;

use std::sync::Arc;
use std::time::Duration;

use dsh_agent::AgentRegistry;
use dsh_kernel::Scope;
use dsh_session::{SessionPersistence, SessionStore};
use dsh_tools::ToolRegistry;

pub use serve::{ServeReport, ShutdownReason};

/// How the bridge behaves.
#[derive(Clone, Debug)]
pub struct AcpConfig {
    /// Whether gated tools ask the client first.
    pub permission: PermissionMode,
    /// The longest input line accepted, in bytes.
    pub max_line_bytes: usize,
    /// How long a cancelled prompt may take to stop before it is answered anyway.
    pub cancel_grace: Duration,
    /// The bound on the whole teardown.
    pub teardown_deadline: Duration,
    /// `agentInfo.title` (the composition root names a scripted model here).
    pub agent_title: String,
    /// Set when dsh cannot reach a model until the user sets something up outside ACP (a
    /// missing key): `initialize` is answered as usual, and `session/new` and `session/load`
    /// fail with `auth_required` (`-32000`) and this text, which says what to set and where.
    pub auth_required: Option<String>,
    /// Follows the error of a turn the model server refused as unauthorised (HTTP 401 or
    /// 403): where the key came from, or that none was sent and what to set.
    pub auth_hint: Option<String>,
    /// The model's prices per million tokens: `usage_update`s then carry the session's cost.
    pub prices: Option<dsh_llm::Prices>,
    /// The user's own slash commands (`$XDG_CONFIG_HOME/dsh/commands`), besides the
    /// project's `.dsh/commands`.
    pub commands_dir: Option<std::path::PathBuf>,
    /// The model server's base URL (none for a scripted model), recorded with each session
    /// so that a terminal continuing it goes back there.
    pub server: Option<String>,
    /// The user's permission rules, which the agent loop applies too: a call they allow
    /// (or deny) is announced running rather than waiting for a question.
    pub rules: std::sync::Arc<dsh_tools::PermissionRules>,
    /// Where the loop remembers "always" answers, read when a session opens for the same.
    pub remembered: Option<std::sync::Arc<dyn dsh_tools::RememberedRules>>,
}

impl Default for AcpConfig {
    fn default() -> AcpConfig {
        AcpConfig {
            permission: PermissionMode::Ask,
            // The official TypeScript client's own line limit.
            max_line_bytes: 32 * 1024 * 1024,
            cancel_grace: Duration::from_secs(5),
            teardown_deadline: Duration::from_secs(10),
            agent_title: "dsh".into(),
            auth_required: None,
            auth_hint: None,
            prices: None,
            commands_dir: None,
            server: None,
            rules: std::sync::Arc::new(dsh_tools::PermissionRules::none()),
            remembered: None,
        }
    }
}

/// Which calls ask the client first (with `session/request_permission`).
pub use dsh_tools::PermissionMode;

/// Why a bridge could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// A service the bridge needs is not provided in the scope.
    #[error("missing service: {0}")]
    MissingService(&'static str),
    /// A configuration value is out of range.
    #[error("invalid ACP configuration: {0}")]
    InvalidConfig(String),
    /// The scope was closed before the bridge could start its tasks.
    #[error("the bridge's scope is closed: {0}")]
    ScopeClosed(#[from] dsh_kernel::KernelError),
}

/// The bridge, with every service it needs resolved.
pub struct AcpBridge {
    scope: Scope,
    config: AcpConfig,
    services: conn::Services,
}

impl AcpBridge {
    /// Resolves every service it needs from `scope` now; a missing one is an error here,
    /// before any byte is read.
    pub fn new(scope: &Scope, config: AcpConfig) -> Result<AcpBridge, AcpError> {
        if config.max_line_bytes == 0 {
            return Err(AcpError::InvalidConfig(
                "max_line_bytes must be positive".into(),
            ));
        }
        if config.cancel_grace.is_zero() || config.teardown_deadline.is_zero() {
            return Err(AcpError::InvalidConfig(
                "cancel_grace and teardown_deadline must be positive".into(),
            ));
        }
        let services = conn::Services {
            registry: scope
                .require::<dyn AgentRegistry>()
                .map_err(|_| AcpError::MissingService("AgentRegistry"))?,
            store: scope
                .require::<SessionStore>()
                .map_err(|_| AcpError::MissingService("SessionStore"))?,
            persistence: scope
                .require::<dyn SessionPersistence>()
                .map_err(|_| AcpError::MissingService("SessionPersistence"))?,
            tools: scope
                .require::<dyn ToolRegistry>()
                .map_err(|_| AcpError::MissingService("ToolRegistry"))?,
        };
        Ok(AcpBridge {
            scope: scope.clone(),
            config,
            services,
        })
    }

    /// Creates and resumes agents through `registry` instead of the scope's: a wrapper that
    /// adds quotas, auditing or fault injection around the provided one. The teardown's
    /// census still counts what `registry` lists.
    pub fn with_registry(mut self, registry: Arc<dyn AgentRegistry>) -> AcpBridge {
        self.services.registry = registry;
        self
    }
}
