//! Creating and resuming agents, and the registry service.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_fs::FileAccess;
use dsh_kernel::Scope;
use dsh_session::SessionId;
use dsh_tools::{ApprovalGate, ToolRegistry};

use crate::agent::Agent;
use crate::error::AgentError;
use crate::handle::AgentHandle;
use crate::options::AgentOverrides;

/// What an agent works with besides the loop's defaults, given by whoever creates or resumes
/// it: one type, carried unchanged from the request to the running agent.
#[derive(Clone, Default)]
pub struct AgentSetup {
    /// Consulted before tools that need approval.
    pub approval: Option<Arc<dyn ApprovalGate>>,
    /// Where the agent's tools read and write files (an editor's buffers); `None` is the
    /// kernel's file service (the local disk).
    pub files: Option<Arc<dyn FileAccess>>,
    /// The tools the agent is offered; `None` is the kernel's tool registry. A front end
    /// with tools of its own for this session (an editor's MCP servers) passes an
    /// [`dsh_tools::OverlayToolRegistry`] over the kernel's.
    pub tools: Option<Arc<dyn ToolRegistry>>,
    /// The session's directories besides its cwd (an editor's other workspace folders):
    /// edits there count as inside.
    pub additional_dirs: Vec<PathBuf>,
}

/// A request for a new agent over a new session.
#[non_exhaustive]
#[derive(Clone)]
pub struct CreateAgent {
    /// The scope that co-owns the agent: disposing it tears the agent down. Required, so a
    /// caller cannot forget to own what it created (configured agents pass the plugin scope).
    pub owner: Scope,
    /// The id; `None` mints one.
    pub session_id: Option<SessionId>,
    /// Absolute UTF-8 working directory; `None` is the process's.
    pub cwd: Option<PathBuf>,
    /// Overrides of the loop's defaults, field by field.
    pub options: AgentOverrides,
    /// What the agent works with: its approval gate, files, tools and directories.
    pub setup: AgentSetup,
    /// The parent session and its tool call, when this agent is a child (a subagent): the
    /// new session's header links both.
    pub parent: Option<(SessionId, String)>,
}

impl CreateAgent {
    /// A request owned by `owner`, with everything else defaulted.
    pub fn new(owner: Scope) -> CreateAgent {
        CreateAgent {
            owner,
            session_id: None,
            cwd: None,
            options: AgentOverrides::default(),
            setup: AgentSetup::default(),
            parent: None,
        }
    }

    /// As the child of session `parent`, started by its tool call `call`.
    pub fn with_parent(mut self, parent: SessionId, call: impl Into<String>) -> CreateAgent {
        self.parent = Some((parent, call.into()));
        self
    }

    /// With the id `id`.
    pub fn with_id(mut self, id: SessionId) -> CreateAgent {
        self.session_id = Some(id);
        self
    }

    /// With the working directory `cwd`.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> CreateAgent {
        self.cwd = Some(cwd.into());
        self
    }

    /// With overrides of the loop's defaults.
    pub fn with_options(mut self, options: AgentOverrides) -> CreateAgent {
        self.options = options;
        self
    }

    /// With an approval gate.
    pub fn with_approval(mut self, approval: Arc<dyn ApprovalGate>) -> CreateAgent {
        self.setup.approval = Some(approval);
        self
    }

    /// With the caller's file access.
    pub fn with_files(mut self, files: Arc<dyn FileAccess>) -> CreateAgent {
        self.setup.files = Some(files);
        self
    }

    /// With the tools the agent is offered.
    pub fn with_tools(mut self, tools: Arc<dyn ToolRegistry>) -> CreateAgent {
        self.setup.tools = Some(tools);
        self
    }

    /// With directories besides the cwd.
    pub fn with_additional_dirs(mut self, dirs: Vec<PathBuf>) -> CreateAgent {
        self.setup.additional_dirs = dirs;
        self
    }
}

/// A request to continue a stored session with a new agent.
#[non_exhaustive]
#[derive(Clone)]
pub struct ResumeAgent {
    /// The scope that co-owns the agent.
    pub owner: Scope,
    /// The stored session.
    pub session_id: SessionId,
    /// Overrides of the loop's defaults for the resumed agent (never taken from the log).
    pub options: AgentOverrides,
    /// What the agent works with: its approval gate, files, tools and directories.
    pub setup: AgentSetup,
}

impl ResumeAgent {
    /// A request to resume `session_id`, owned by `owner`.
    pub fn new(owner: Scope, session_id: SessionId) -> ResumeAgent {
        ResumeAgent {
            owner,
            session_id,
            options: AgentOverrides::default(),
            setup: AgentSetup::default(),
        }
    }

    /// With overrides of the loop's defaults.
    pub fn with_options(mut self, options: AgentOverrides) -> ResumeAgent {
        self.options = options;
        self
    }

    /// With an approval gate.
    pub fn with_approval(mut self, approval: Arc<dyn ApprovalGate>) -> ResumeAgent {
        self.setup.approval = Some(approval);
        self
    }

    /// With the caller's file access.
    pub fn with_files(mut self, files: Arc<dyn FileAccess>) -> ResumeAgent {
        self.setup.files = Some(files);
        self
    }

    /// With the tools the agent is offered.
    pub fn with_tools(mut self, tools: Arc<dyn ToolRegistry>) -> ResumeAgent {
        self.setup.tools = Some(tools);
        self
    }

    /// With directories besides the cwd.
    pub fn with_additional_dirs(mut self, dirs: Vec<PathBuf>) -> ResumeAgent {
        self.setup.additional_dirs = dirs;
        self
    }
}

/// Creates and resumes agents. Split from the registry so wrappers (quotas, audit) can wrap
/// creation alone.
#[async_trait]
pub trait AgentFactory: Send + Sync + 'static {
    /// A new agent over a new session.
    async fn create(&self, request: CreateAgent) -> Result<AgentHandle, AgentError>;

    /// A new agent over a stored session, crash-repaired, idle.
    async fn resume(&self, request: ResumeAgent) -> Result<AgentHandle, AgentError>;
}

/// The agent service: `scope.get::<dyn AgentRegistry>()`.
pub trait AgentRegistry: AgentFactory {
    /// The live agent with `id`, from publication until unregistration.
    fn get(&self, id: &SessionId) -> Option<Arc<dyn Agent>>;

    /// A snapshot of the live agents, in publication order.
    fn list(&self) -> Vec<Arc<dyn Agent>>;
}
