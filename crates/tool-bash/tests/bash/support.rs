//! The rig: a runtime with the tool registry, the local executor and the bash tools; fake
//! callers; `/proc` checks for test trees.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dsh_kernel::{CancellationToken, Runtime, Scope};
use dsh_session::SessionId;
use dsh_shell::ShellExecutor;
use dsh_test_providers::providers::{LocalShellConfig, ShellLocalPlugin};
pub use dsh_test_support::processes::{alive, all_gone, eventually, marker, sleepers};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::{ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRegistryPlugin};
use serde_json::{Value, json};

pub fn shell_config() -> LocalShellConfig {
    LocalShellConfig {
        term_grace: Duration::from_millis(200),
        drain_grace: Duration::from_millis(100),
        ..LocalShellConfig::default()
    }
}

pub struct Rig {
    pub runtime: Runtime,
}

/// A caller: an agent id, its tool-effects scope and its turn's cancellation.
pub struct Caller {
    pub id: SessionId,
    pub scope: Scope,
    pub cwd: Option<PathBuf>,
    pub cancel: CancellationToken,
}

impl Caller {
    pub fn cx(&self) -> ToolContext {
        ToolContext::for_caller(
            self.id.clone(),
            self.scope.clone(),
            self.cwd.clone(),
            self.cancel.clone(),
        )
    }
}

impl Rig {
    pub async fn new() -> Rig {
        Rig::with_shell(shell_config()).await
    }

    pub async fn with_shell(config: LocalShellConfig) -> Rig {
        let runtime = Runtime::new();
        runtime.load(ToolRegistryPlugin).await.unwrap();
        runtime.load(ShellLocalPlugin::new(config)).await.unwrap();
        runtime.load(BashToolsPlugin::default()).await.unwrap();
        Rig { runtime }
    }

    pub fn exec(&self) -> Arc<dyn ShellExecutor> {
        self.runtime.scope().require::<dyn ShellExecutor>().unwrap()
    }

    pub fn tools(&self) -> Arc<dyn ToolRegistry> {
        self.runtime.scope().require::<dyn ToolRegistry>().unwrap()
    }

    pub fn caller(&self, cwd: Option<PathBuf>) -> Caller {
        let id = SessionId::mint();
        let scope = self.runtime.scope().child(&format!("agent-{id}")).unwrap();
        Caller {
            id,
            scope,
            cwd,
            cancel: CancellationToken::new(),
        }
    }

    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        cx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.tools().get(tool).unwrap().call(args, cx).await
    }

    /// Starts `command` in the background as `cx`'s caller; returns the task id text.
    pub async fn start(&self, command: impl Into<String>, cx: ToolContext) -> String {
        let args = json!({"command": command.into(), "run_in_background": true});
        started_id(&ok(self.call("bash", args, cx).await))
    }

    /// A call with no agent behind it.
    pub fn anonymous() -> ToolContext {
        ToolContext::new("call", CancellationToken::new())
    }
}

/// The text of a successful call.
pub fn ok(result: Result<ToolOutput, ToolError>) -> String {
    let output = result.unwrap();
    assert!(!output.is_error);
    output.content
}

/// The error of a failed call.
pub fn err(result: Result<ToolOutput, ToolError>) -> ToolError {
    result.unwrap_err()
}

/// The task id in `started background task sh-N`.
pub fn started_id(text: &str) -> String {
    text.strip_prefix("started background task ")
        .unwrap()
        .to_owned()
}
