//! What a tool body knows about the call it serves.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs::{FileAccess, Roots};
use dsh_kernel::{CancellationToken, Scope};
use dsh_session::SessionId;

/// Where a running call's progress goes: text as it is produced (a command's output), shown
/// live to the people watching and never stored. It must return at once — it buffers, and
/// whoever drains the buffer may coalesce or drop what a slow watcher cannot take — so a
/// tool never waits for its audience.
pub type ProgressSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The context of one tool call. Built by the agent loop; tool crates build one with
/// [`ToolContext::for_caller`] to test their tools as a chosen caller.
#[derive(Clone)]
pub struct ToolContext {
    caller_id: Option<SessionId>,
    caller_scope: Option<Scope>,
    session_cwd: Option<PathBuf>,
    extra_roots: Vec<PathBuf>,
    files: Option<Arc<dyn FileAccess>>,
    cancellation: CancellationToken,
    call_id: String,
    position: Option<(u32, u32)>,
    progress: Option<ProgressSink>,
    /// The caller's own approval gate and tools: what a child agent it starts inherits.
    approval: Option<Arc<dyn crate::ApprovalGate>>,
    tools: Option<Arc<dyn crate::ToolRegistry>>,
    steps_left: Option<u32>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("caller_id", &self.caller_id)
            .field("session_cwd", &self.session_cwd)
            .field("call_id", &self.call_id)
            .field("position", &self.position)
            .field("progress", &self.progress.is_some())
            .field("files", &self.files.as_ref().map(|f| f.holder().to_owned()))
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A call made outside any agent: no caller, no scope, no cwd.
    pub fn new(call_id: impl Into<String>, cancellation: CancellationToken) -> ToolContext {
        ToolContext {
            caller_id: None,
            caller_scope: None,
            session_cwd: None,
            extra_roots: Vec::new(),
            files: None,
            cancellation,
            call_id: call_id.into(),
            position: None,
            progress: None,
            approval: None,
            tools: None,
            steps_left: None,
        }
    }

    /// A call made by the agent `id`, whose tool effects belong to `scope`.
    pub fn for_caller(
        id: SessionId,
        scope: Scope,
        session_cwd: Option<PathBuf>,
        cancellation: CancellationToken,
    ) -> ToolContext {
        ToolContext {
            caller_id: Some(id),
            caller_scope: Some(scope),
            session_cwd,
            extra_roots: Vec::new(),
            files: None,
            cancellation,
            call_id: String::new(),
            position: None,
            progress: None,
            approval: None,
            tools: None,
            steps_left: None,
        }
    }

    /// With the caller's approval gate (none: its calls are not asked about).
    pub fn with_approval(mut self, approval: Option<Arc<dyn crate::ApprovalGate>>) -> ToolContext {
        self.approval = approval;
        self
    }

    /// With the tools the caller is offered.
    pub fn with_tools(mut self, tools: Arc<dyn crate::ToolRegistry>) -> ToolContext {
        self.tools = Some(tools);
        self
    }

    /// With how many more model calls the caller's turn may make after this step.
    pub fn with_steps_left(mut self, steps: u32) -> ToolContext {
        self.steps_left = Some(steps);
        self
    }

    /// How many more model calls the caller's turn may make after this step (`None`
    /// outside an agent): a child agent's steps must fit in them.
    pub fn steps_left(&self) -> Option<u32> {
        self.steps_left
    }

    /// The caller's approval gate, for a child agent that must ask the same person the same
    /// way; `None` outside an agent or when the caller asks nothing.
    pub fn approval(&self) -> Option<&Arc<dyn crate::ApprovalGate>> {
        self.approval.as_ref()
    }

    /// The tools the caller is offered (an editor's MCP servers included), for a child agent
    /// that must have no more.
    pub fn tools(&self) -> Option<&Arc<dyn crate::ToolRegistry>> {
        self.tools.as_ref()
    }

    /// The same context for the model's call `call_id` at `(turn, step)`.
    pub fn with_call(mut self, call_id: impl Into<String>, turn: u32, step: u32) -> ToolContext {
        self.call_id = call_id.into();
        self.position = Some((turn, step));
        self
    }

    /// The same context, reporting progress to `sink`.
    pub fn with_progress(mut self, sink: ProgressSink) -> ToolContext {
        self.progress = Some(sink);
        self
    }

    /// The same context, reading and writing files through `files` (an editor's, when the
    /// caller attached one; else the local disk).
    pub fn with_files(mut self, files: Arc<dyn FileAccess>) -> ToolContext {
        self.files = Some(files);
        self
    }

    /// The same context, with `dirs` as the session's directories besides its cwd.
    pub fn with_extra_roots(mut self, dirs: Vec<PathBuf>) -> ToolContext {
        self.extra_roots = dirs;
        self
    }

    /// Where the caller's files are read and written; `None` when nobody provided any.
    pub fn files(&self) -> Option<&Arc<dyn FileAccess>> {
        self.files.as_ref()
    }

    /// The session's directories: its cwd and any others; `None` without a cwd.
    pub fn roots(&self) -> Option<Roots> {
        self.session_cwd
            .as_ref()
            .map(|cwd| Roots::new(cwd.clone(), self.extra_roots.clone()))
    }

    /// Reports `text` as the call's progress (nothing happens when nobody watches).
    pub fn progress(&self, text: &str) {
        if let Some(sink) = &self.progress
            && !text.is_empty()
        {
            sink(text);
        }
    }

    /// Whether anybody watches the call's progress (a tool may skip the work of producing it).
    pub fn watched(&self) -> bool {
        self.progress.is_some()
    }

    /// The calling agent's id: the owner token of whatever the tool starts for it.
    pub fn caller_id(&self) -> Option<&SessionId> {
        self.caller_id.as_ref()
    }

    /// A scope reserved for the caller's tool effects, disposed with the agent.
    pub fn caller_scope(&self) -> Option<Scope> {
        self.caller_scope.clone()
    }

    /// The calling session's working directory.
    pub fn session_cwd(&self) -> Option<&Path> {
        self.session_cwd.as_deref()
    }

    /// The turn's cancellation token: watch it, never cancel it.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// The model's id of this call.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// `(turn, step)` of the call, when an agent made it.
    pub fn position(&self) -> Option<(u32, u32)> {
        self.position
    }
}
