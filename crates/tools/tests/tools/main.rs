//! dsh-tools' integration suite: the standard registry, snapshots, contexts and result codes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use dsh_kernel::{CancellationToken, Runtime};
use dsh_session::SessionId;
use dsh_tools::{
    StandardToolRegistry, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolRegistryError, ToolRegistryPlugin, ToolSchema, codes, is_result_code,
};
use futures::future::BoxFuture;

struct Named(&'static str);

impl Tool for Named {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: self.0.into(),
            description: format!("the {} tool", self.0),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn call(
        &self,
        _args: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let id = cx.caller_id().map(|id| id.as_str().to_owned());
        Box::pin(async move { Ok(ToolOutput::text(id.unwrap_or_default())) })
    }
}

#[tokio::test]
async fn registration_ends_with_the_scope_that_made_it() {
    let runtime = Runtime::new();
    let registry = StandardToolRegistry::new();
    let plugin = runtime.scope().child("plugin:bash").unwrap();
    registry.register(&plugin, Arc::new(Named("bash"))).unwrap();
    registry
        .register(runtime.scope(), Arc::new(Named("echo")))
        .unwrap();
    assert!(registry.get("bash").is_some());

    plugin.dispose().await;

    assert!(registry.get("bash").is_none());
    assert_eq!(registry.snapshot().names(), ["echo"]);
    assert!(matches!(
        registry.register(&plugin, Arc::new(Named("late"))),
        Err(ToolRegistryError::Scope(_))
    ));
    assert!(
        registry.get("late").is_none(),
        "a refused registration leaves nothing"
    );
}

#[tokio::test]
async fn bad_and_duplicate_names_are_refused() {
    let runtime = Runtime::new();
    let registry = StandardToolRegistry::new();
    for bad in ["", "has space", "dot.ted", "ü", &"x".repeat(65)] {
        let name: &'static str = Box::leak(bad.to_owned().into_boxed_str());
        assert!(
            matches!(
                registry.register(runtime.scope(), Arc::new(Named(name))),
                Err(ToolRegistryError::InvalidName { .. })
            ),
            "{bad:?}"
        );
    }
    registry
        .register(runtime.scope(), Arc::new(Named("bash")))
        .unwrap();
    let err = registry
        .register(runtime.scope(), Arc::new(Named("bash")))
        .unwrap_err();
    assert!(matches!(err, ToolRegistryError::Duplicate { .. }), "{err}");
    assert_eq!(registry.snapshot().len(), 1);
}

#[tokio::test]
async fn a_snapshot_never_changes_and_lists_schemas_by_name() {
    let runtime = Runtime::new();
    let registry = StandardToolRegistry::new();
    let scope = runtime.scope().child("tools").unwrap();
    for name in ["zeta", "alpha", "mid"] {
        registry.register(&scope, Arc::new(Named(name))).unwrap();
    }
    let before = registry.snapshot();
    scope.dispose().await;
    assert_eq!(before.names(), ["alpha", "mid", "zeta"]);
    let names: Vec<String> = before.schemas().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["alpha", "mid", "zeta"]);
    assert!(before.get("mid").is_some());
    assert!(registry.snapshot().is_empty());
}

#[tokio::test]
async fn the_registry_plugin_provides_the_service() {
    let runtime = Runtime::new();
    runtime.load(ToolRegistryPlugin).await.unwrap();
    let registry = runtime.scope().require::<dyn ToolRegistry>().unwrap();
    registry
        .register(runtime.scope(), Arc::new(Named("echo")))
        .unwrap();
    let tool = registry.get("echo").unwrap();
    let cx = ToolContext::for_caller(
        SessionId::parse("agent-a").unwrap(),
        runtime.scope().clone(),
        Some("/work".into()),
        CancellationToken::new(),
    )
    .with_call("call-1", 2, 3);
    assert_eq!(cx.position(), Some((2, 3)));
    assert_eq!(cx.call_id(), "call-1");
    assert_eq!(cx.session_cwd(), Some(std::path::Path::new("/work")));
    let out = tool.call(serde_json::json!({}), cx).await.unwrap();
    assert_eq!(out.content, "agent-a");
    runtime.unload("tool-registry").await.unwrap();
    assert!(runtime.scope().get::<dyn ToolRegistry>().is_none());
    runtime.shutdown().await;
}

#[test]
fn a_context_outside_any_agent_has_no_caller() {
    let cx = ToolContext::new("c", CancellationToken::new());
    assert!(cx.caller_id().is_none() && cx.caller_scope().is_none());
    assert!(cx.session_cwd().is_none() && cx.position().is_none());
}

#[test]
fn result_codes_are_lowercase_snake_case() {
    for good in [
        codes::UNKNOWN_TOOL,
        codes::INVALID_ARGUMENTS,
        codes::TOOL_REJECTED,
        codes::TOOL_PANICKED,
        codes::OUTPUT_TOO_LARGE,
        codes::TOOL_NOT_STARTED,
        codes::TOOL_OUTCOME_UNKNOWN,
        "denied",
        "exit_2",
    ] {
        assert!(is_result_code(good), "{good}");
    }
    for bad in [
        "",
        "Denied",
        "with space",
        "_x",
        "x_",
        "a__b",
        "9lives",
        "dash-ed",
    ] {
        assert!(!is_result_code(bad), "{bad}");
    }
    assert_eq!(ToolError::new("Not Snake", "m").code, "tool_error");
    assert_eq!(ToolError::new("denied", "m").to_string(), "denied: m");
}
