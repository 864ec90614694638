//! The plugin's wiring, the schemas and descriptions, the tools' flags and presenters, and
//! the exact request the `bash` tool builds.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use dsh_kernel::Runtime;
use dsh_session::{ToolCallRecord, ToolResultRecord};
use dsh_shell::{
    ExitInfo, OutputChunk, RunOutput, ShellError, ShellExecRequest, ShellExecSpec, ShellExecutor,
    TaskDoneListener, TaskDoneSubscription, TaskId, TaskInfo,
};
use dsh_tool_bash::BashToolsPlugin;
use dsh_tools::{
    Effect, Roots, StandardToolRegistry, TerminalExit, ToolCallView, ToolKindHint, ToolRegistry,
    ToolRegistryPlugin, ToolResultView,
};
use serde_json::json;

use crate::support::*;

#[tokio::test]
async fn without_a_shell_provider_the_plugin_registers_nothing() {
    let runtime = Runtime::new();
    runtime.load(ToolRegistryPlugin).await.unwrap();
    assert!(runtime.load(BashToolsPlugin::default()).await.is_err());
    let registry = runtime.scope().require::<dyn ToolRegistry>().unwrap();
    assert!(registry.snapshot().is_empty());
    runtime.shutdown().await;
}

/// Records the order of registrations and delegates to the standard registry.
struct RecordingRegistry {
    names: Mutex<Vec<String>>,
    inner: StandardToolRegistry,
}

impl ToolRegistry for RecordingRegistry {
    fn register(
        &self,
        scope: &dsh_kernel::Scope,
        tool: Arc<dyn dsh_tools::Tool>,
    ) -> Result<(), dsh_tools::ToolRegistryError> {
        // Registration reads the name without building the schema: they must agree.
        assert_eq!(tool.name(), tool.schema().name);
        self.names.lock().unwrap().push(tool.name());
        self.inner.register(scope, tool)
    }
    fn get(&self, name: &str) -> Option<Arc<dyn dsh_tools::Tool>> {
        self.inner.get(name)
    }
    fn snapshot(&self) -> dsh_tools::ToolSet {
        self.inner.snapshot()
    }
}

#[tokio::test]
async fn three_tools_in_order_with_their_flags_schemas_and_descriptions() {
    let runtime = Runtime::new();
    let recording = Arc::new(RecordingRegistry {
        names: Mutex::default(),
        inner: StandardToolRegistry::new(),
    });
    runtime
        .scope()
        .provide::<dyn ToolRegistry>(recording.clone())
        .unwrap();
    runtime
        .load(dsh_test_providers::providers::ShellLocalPlugin::new(
            shell_config(),
        ))
        .await
        .unwrap();
    runtime.load(BashToolsPlugin::default()).await.unwrap();
    assert_eq!(
        *recording.names.lock().unwrap(),
        ["bash", "bash_output", "bash_kill"]
    );
    let rig = Rig { runtime };
    let tools = rig.tools();
    let (bash, output, kill) = (
        tools.get("bash").unwrap(),
        tools.get("bash_output").unwrap(),
        tools.get("bash_kill").unwrap(),
    );
    assert_eq!(
        (
            bash.parallel_safe(),
            output.parallel_safe(),
            kill.parallel_safe()
        ),
        (false, true, false)
    );
    let any = json!({});
    let roots = Roots::new("/", Vec::new());
    assert_eq!(
        (
            bash.effect(&any, &roots),
            output.effect(&any, &roots),
            kill.effect(&any, &roots)
        ),
        (Effect::Execute, Effect::Read, Effect::Read)
    );
    let schema = bash.schema();
    for needle in [
        "fresh non-login bash",
        "`cd`",
        "merged",
        "120000 ms",
        "600000",
        "head and tail",
        "bash_output",
        "run_in_background",
        "notice",
        "terminated",
        "bash_kill",
    ] {
        assert!(
            schema.description.contains(needle),
            "the bash description lacks {needle:?}"
        );
    }
    // Sorted: serde_json keeps insertion order when another crate in the build enables
    // `preserve_order`, and the set of parameters is what matters.
    let mut keys = schema.parameters["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect::<Vec<_>>();
    keys.sort();
    assert_eq!(
        keys,
        [
            "command",
            "description",
            "outside_sandbox",
            "run_in_background",
            "timeout_ms",
            "workdir"
        ]
    );
    assert_eq!(schema.parameters["additionalProperties"], false);
    assert_eq!(schema.parameters["required"], json!(["command"]));
    assert_eq!(
        schema.parameters["properties"]["timeout_ms"]["maximum"],
        600000
    );
    let schema = output.schema();
    assert_eq!(
        schema.parameters["properties"]["wait_ms"]["maximum"],
        600000
    );
    assert_eq!(schema.parameters["required"], json!(["task_id"]));
    assert_eq!(kill.schema().parameters["required"], json!(["task_id"]));
    rig.runtime.shutdown().await;
}

fn call(name: &str, arguments: serde_json::Value) -> ToolCallRecord {
    ToolCallRecord {
        turn: 1,
        step: 1,
        call_id: "c1".into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

fn result(content: &str, meta: Option<serde_json::Value>) -> ToolResultRecord {
    ToolResultRecord {
        turn: 1,
        step: 1,
        call_id: "c1".into(),
        name: "bash".into(),
        content: content.into(),
        is_error: false,
        error_code: None,
        meta,
        call_seq: None,
    }
}

#[tokio::test]
async fn presenters_show_terminals_for_foreground_bash_and_cards_for_the_rest() {
    let rig = Rig::new().await;
    let tools = rig.tools();
    let bash = tools.get("bash").unwrap();
    let fg = call(
        "bash",
        json!({"command": "ls", "description": "list", "workdir": "/tmp"}),
    );
    assert!(matches!(
        bash.present_call(&fg),
        Some(ToolCallView::Terminal { command, description, cwd, .. })
            if command == "ls" && description.as_deref() == Some("list") && cwd.as_deref() == Some(std::path::Path::new("/tmp"))
    ));
    let shown = bash.present_result(
        &fg,
        &result(
            "a\n[note: processes this command left running were terminated; use run_in_background for long-running processes]\n[exit code: 3]",
            Some(json!({"exit_code": 3, "signal": null})),
        ),
    );
    assert_eq!(
        shown,
        Some(ToolResultView::Terminal {
            output: "a\n".into(),
            exit: TerminalExit {
                exit_code: Some(3),
                note: Some(
                    "[note: processes this command left running were terminated; use run_in_background for long-running processes]".into()
                ),
                ..TerminalExit::default()
            }
        })
    );
    // What the CLI once read out of the text, the view carries: a command that printed
    // nothing shows nothing, a timeout is a flag, and a stopped command keeps its output
    // and its own last line as the note.
    let quiet = bash.present_result(
        &fg,
        &result(
            "(no output)\n[timed out after 100 ms; killed by signal: SIGTERM]",
            Some(json!({"exit_code": null, "signal": "SIGTERM", "timed_out": true})),
        ),
    );
    assert_eq!(
        quiet,
        Some(ToolResultView::Terminal {
            output: String::new(),
            exit: TerminalExit {
                signal: Some("SIGTERM".into()),
                timed_out: true,
                ..TerminalExit::default()
            }
        })
    );
    let mut stopped = result(
        "started\n[cancelled by the user after 0.1 s; the command was stopped]",
        None,
    );
    stopped.is_error = true;
    assert_eq!(
        bash.present_result(&fg, &stopped),
        Some(ToolResultView::Terminal {
            output: "started\n".into(),
            exit: TerminalExit {
                note: Some("[cancelled by the user after 0.1 s; the command was stopped]".into()),
                ..TerminalExit::default()
            }
        })
    );
    let bg = call(
        "bash",
        json!({"command": "make", "run_in_background": true}),
    );
    assert!(matches!(
        bash.present_call(&bg),
        Some(ToolCallView::Generic { title, kind: ToolKindHint::Execute, .. }) if title == "make"
    ));
    let read = call("bash_output", json!({"task_id": "sh-4"}));
    assert!(matches!(
        tools.get("bash_output").unwrap().present_call(&read),
        Some(ToolCallView::Generic { title, kind: ToolKindHint::Read, .. }) if title == "Read output of background task sh-4"
    ));
    let kill = call("bash_kill", json!({"task_id": "sh-4"}));
    assert!(matches!(
        tools.get("bash_kill").unwrap().present_call(&kill),
        Some(ToolCallView::Generic { title, kind: ToolKindHint::Execute, .. }) if title == "Kill background task sh-4"
    ));
    rig.runtime.shutdown().await;
}

/// Records every request and refuses it, so nothing runs.
#[derive(Default)]
struct Recording {
    requests: Mutex<Vec<ShellExecRequest>>,
}

#[async_trait]
impl ShellExecutor for Recording {
    fn resolve(&self, request: ShellExecRequest) -> Result<ShellExecSpec, ShellError> {
        self.requests.lock().unwrap().push(request);
        Err(ShellError::Disposed)
    }
    async fn run(&self, _: ShellExecSpec) -> Result<RunOutput, ShellError> {
        Err(ShellError::Disposed)
    }
    async fn start(&self, _: ShellExecSpec) -> Result<TaskId, ShellError> {
        Err(ShellError::Disposed)
    }
    async fn read_output(&self, id: TaskId, _: u64, _: usize) -> Result<OutputChunk, ShellError> {
        Err(ShellError::UnknownTask(id))
    }
    async fn kill(&self, id: TaskId) -> Result<(), ShellError> {
        Err(ShellError::UnknownTask(id))
    }
    async fn wait(&self, id: TaskId) -> Result<ExitInfo, ShellError> {
        Err(ShellError::UnknownTask(id))
    }
    async fn release(&self, id: TaskId) -> Result<ExitInfo, ShellError> {
        Err(ShellError::UnknownTask(id))
    }
    fn list(&self) -> Vec<TaskInfo> {
        Vec::new()
    }
    fn owner_of(&self, _: TaskId) -> Option<String> {
        None
    }
    fn on_task_done(&self, _: TaskDoneListener) -> TaskDoneSubscription {
        TaskDoneSubscription::new(|| {})
    }
}

#[tokio::test]
async fn the_request_holds_exactly_the_named_fields_and_the_caller_as_owner() {
    let runtime = Runtime::new();
    runtime.load(ToolRegistryPlugin).await.unwrap();
    let recording = Arc::new(Recording::default());
    runtime
        .scope()
        .provide::<dyn ShellExecutor>(recording.clone())
        .unwrap();
    runtime.load(BashToolsPlugin::default()).await.unwrap();
    let rig = Rig { runtime };
    let cwd = tempfile::tempdir().unwrap();
    let a = rig.caller(Some(cwd.path().to_path_buf()));
    err(rig
        .call(
            "bash",
            json!({"command": " ls ", "env": {"X": "1"}}),
            a.cx(),
        )
        .await);
    assert!(
        recording.requests.lock().unwrap().is_empty(),
        "a refused argument reaches no executor"
    );
    err(rig
        .call(
            "bash",
            json!({"command": " ls ", "description": "d", "timeout_ms": 1500, "workdir": "w"}),
            a.cx(),
        )
        .await);
    err(rig
        .call(
            "bash",
            json!({"command": "srv", "run_in_background": true}),
            a.cx(),
        )
        .await);
    let requests = recording.requests.lock().unwrap().clone();
    let (fg, bg) = (&requests[0], &requests[1]);
    assert_eq!(fg.command, " ls ");
    assert_eq!(fg.workdir.as_deref(), Some(cwd.path().join("w").as_path()));
    assert_eq!(fg.timeout, Some(std::time::Duration::from_millis(1500)));
    assert!(!fg.background);
    assert_eq!(fg.output_cap, Some(24 * 1024));
    assert_eq!(fg.owner.as_deref(), Some(a.id.as_str()));
    assert!(fg.stdin.is_none() && fg.env.is_empty());
    assert!(bg.background);
    assert_eq!(bg.output_cap, None);
    assert_eq!(bg.timeout, None);
    assert_eq!(bg.owner.as_deref(), Some(a.id.as_str()));
    rig.runtime.shutdown().await;
}
