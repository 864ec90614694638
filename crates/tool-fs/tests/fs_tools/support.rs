//! The rig: a runtime with the tool registry, the local files and the file tools; callers
//! with a cwd in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_fs::FileAccess;
use dsh_kernel::{CancellationToken, Runtime, Scope};
use dsh_session::SessionId;
use dsh_test_providers::providers::FsLocalPlugin;
use dsh_tool_fs::{FsToolsPlugin, ToolFsConfig};
use dsh_tools::{ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRegistryPlugin};
use serde_json::Value;

pub use dsh_test_support::tree::write;

pub struct Rig {
    pub runtime: Runtime,
    pub dir: tempfile::TempDir,
}

/// An agent: its id, scope and cwd.
pub struct Caller {
    pub id: SessionId,
    pub scope: Scope,
    pub cwd: PathBuf,
    pub files: Arc<dyn FileAccess>,
}

impl Caller {
    pub fn cx(&self) -> ToolContext {
        self.cx_cancelled_by(CancellationToken::new())
    }

    /// A context whose call is cancelled by `token`.
    pub fn cx_cancelled_by(&self, token: CancellationToken) -> ToolContext {
        ToolContext::for_caller(
            self.id.clone(),
            self.scope.clone(),
            Some(self.cwd.clone()),
            token,
        )
        .with_files(self.files.clone())
    }
}

impl Rig {
    pub async fn new() -> Rig {
        Rig::with(ToolFsConfig::default()).await
    }

    /// A rig whose file tools have `config`.
    pub async fn with(config: ToolFsConfig) -> Rig {
        let runtime = Runtime::new();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        runtime.load(FsLocalPlugin::default()).await.unwrap();
        runtime.load(FsToolsPlugin::new(config)).await.unwrap();
        Rig {
            runtime,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn caller(&self) -> Caller {
        let id = SessionId::mint();
        Caller {
            scope: self.runtime.scope().child(&format!("agent-{id}")).unwrap(),
            id,
            cwd: self.root().to_path_buf(),
            files: self.runtime.scope().require::<dyn FileAccess>().unwrap(),
        }
    }

    pub async fn call(
        &self,
        caller: &Caller,
        tool: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        self.call_with(caller.cx(), tool, args).await
    }

    /// Calls `tool` with the context `cx` (one whose cancellation a test holds).
    pub async fn call_with(
        &self,
        cx: ToolContext,
        tool: &str,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        let tools = self.runtime.scope().require::<dyn ToolRegistry>().unwrap();
        let tool = tools.get(tool).unwrap();
        tool.call(args, cx).await
    }

    pub fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.root().join(rel)).unwrap()
    }
}

pub fn ok(result: Result<ToolOutput, ToolError>) -> ToolOutput {
    result.unwrap_or_else(|e| panic!("expected success, got {e}"))
}

pub fn err(result: Result<ToolOutput, ToolError>) -> ToolError {
    match result {
        Ok(out) => panic!("expected an error, got {:?}", out.content),
        Err(e) => e,
    }
}
