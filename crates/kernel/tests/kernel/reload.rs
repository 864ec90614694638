//! The reload invariant in miniature (the tool-bash ownership seam of the seeds): a provider
//! keeps a task table keyed by an opaque owner token; a consumer plugin holds no table and
//! decides access by comparing tokens. Reloading the consumer must leave the table, and every
//! owner check, unchanged.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use dsh_kernel::{BoxError, Plugin, Runtime, Scope};
use parking_lot::Mutex;

/// The provider's seam: tasks with an owner string it stores and never interprets.
trait Executor: Send + Sync {
    fn start(&self, owner: &str) -> u64;
    fn owner_of(&self, task: u64) -> Option<String>;
}

#[derive(Default)]
struct TaskTable {
    tasks: Mutex<BTreeMap<u64, String>>,
}

impl Executor for TaskTable {
    fn start(&self, owner: &str) -> u64 {
        let mut tasks = self.tasks.lock();
        let id = tasks.len() as u64 + 1;
        tasks.insert(id, owner.to_owned());
        id
    }

    fn owner_of(&self, task: u64) -> Option<String> {
        self.tasks.lock().get(&task).cloned()
    }
}

struct ExecutorPlugin;

#[async_trait]
impl Plugin for ExecutorPlugin {
    fn name(&self) -> &str {
        "executor"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.provide::<dyn Executor>(Arc::new(TaskTable::default()))?;
        Ok(())
    }
}

/// The consumer's seam: the tool the agents call.
trait Tool: Send + Sync {
    fn start(&self, caller: &str) -> Result<u64, BoxError>;
    fn may_read(&self, caller: &str, task: u64) -> Result<bool, BoxError>;
    fn generation(&self) -> u32;
}

/// Holds configuration only; looks the executor up per call.
struct BashTool {
    scope: Scope,
    generation: u32,
}

impl Tool for BashTool {
    fn start(&self, caller: &str) -> Result<u64, BoxError> {
        Ok(self.scope.require::<dyn Executor>()?.start(caller))
    }

    fn may_read(&self, caller: &str, task: u64) -> Result<bool, BoxError> {
        let owner = self.scope.require::<dyn Executor>()?.owner_of(task);
        Ok(owner.as_deref() == Some(caller))
    }

    fn generation(&self) -> u32 {
        self.generation
    }
}

struct ToolPlugin {
    generation: u32,
}

#[async_trait]
impl Plugin for ToolPlugin {
    fn name(&self) -> &str {
        "tool"
    }

    async fn apply(&self, scope: &Scope) -> Result<(), BoxError> {
        scope.require::<dyn Executor>()?;
        scope.provide::<dyn Tool>(Arc::new(BashTool {
            scope: scope.clone(),
            generation: self.generation,
        }))?;
        Ok(())
    }
}

#[tokio::test]
async fn reloading_a_consumer_keeps_provider_owned_state_and_owner_checks() {
    let runtime = Runtime::new();
    runtime.load(ExecutorPlugin).await.unwrap();
    runtime.load(ToolPlugin { generation: 1 }).await.unwrap();
    let scope = runtime.scope();

    let tool = scope.require::<dyn Tool>().unwrap();
    let a = tool.start("agent-a").unwrap();
    let b = tool.start("agent-b").unwrap();
    let empty_owner = tool.start("").unwrap();
    let table_before = scope.require::<dyn Executor>().unwrap();

    runtime.reload(ToolPlugin { generation: 2 }).await.unwrap();

    let tool = scope.require::<dyn Tool>().unwrap();
    assert_eq!(
        tool.generation(),
        2,
        "the new consumer instance is in place"
    );
    let table_after = scope.require::<dyn Executor>().unwrap();
    assert!(
        Arc::ptr_eq(&table_before, &table_after),
        "the provider's table is the same object"
    );
    assert_eq!(table_after.owner_of(a).as_deref(), Some("agent-a"));
    assert_eq!(table_after.owner_of(b).as_deref(), Some("agent-b"));
    assert!(tool.may_read("agent-a", a).unwrap());
    assert!(
        !tool.may_read("agent-b", a).unwrap(),
        "ownership still fences"
    );
    assert!(tool.may_read("agent-b", b).unwrap());
    assert!(!tool.may_read("agent-a", b).unwrap());
    assert!(
        tool.may_read("", empty_owner).unwrap(),
        "an empty token is a real owner"
    );
    assert!(!tool.may_read("agent-a", empty_owner).unwrap());
    assert!(
        !tool.may_read("agent-a", 99).unwrap(),
        "unknown task has no owner"
    );

    // Contrast: the state lives in the provider, so reloading the provider resets it.
    runtime.reload(ExecutorPlugin).await.unwrap();
    assert_eq!(scope.require::<dyn Executor>().unwrap().owner_of(a), None);
    assert!(!tool.may_read("agent-a", a).unwrap());

    runtime.shutdown().await;
    assert!(
        tool.start("agent-a").is_err(),
        "the executor is gone after shutdown"
    );
}

#[tokio::test]
async fn a_consumer_without_its_provider_fails_to_apply_and_registers_nothing() {
    let runtime = Runtime::new();
    let err = runtime
        .load(ToolPlugin { generation: 1 })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Executor"), "{err}");
    assert!(runtime.scope().get::<dyn Tool>().is_none());
}
