//! What a subagent costs the harness, over the real loop, session store and JSONL logs with
//! a model that answers at once:
//!
//! - start: from the parent's model call that asks for `task` to the child's first model
//!   request, p50 and p99;
//! - cancel: from the parent's cancel to every one of 4 running children's model streams
//!   closed, p50 and p99;
//! - memory: the heap an idle child agent holds (net bytes over 100 children).
//!
//! Run with `cargo bench -p dsh-tool-task --bench subagents`; figures go to stdout.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    missing_docs
)]

use std::sync::Arc;

use dsh_test_support::heap::{LiveBytes, live_bytes};
use std::time::{Duration, Instant};

use dsh_agent::{AgentRegistry, CancelCause, CreateAgent, UserMessage};
use dsh_kernel::Runtime;
use dsh_llm::{
    FinishReason, Message, Model, ModelError, ModelEvent, ModelInfo, ModelRequest, ModelStream,
};
use dsh_session::SessionStorePlugin;
use dsh_test_providers::providers::{AgentLoopPlugin, JsonlConfig, JsonlPlugin, LoopConfig};
use dsh_tool_task::{TaskConfig, TaskPlugin};
use dsh_tools::ToolRegistryPlugin;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

#[global_allocator]
static HEAP: LiveBytes = LiveBytes;

/// What the model saw happen, with when.
enum Seen {
    Asked(String, Instant),
    Closed(Instant),
}

/// Answers by the first user message: `start` delegates one child, `four` four that hang
/// until cancelled, a child `ok` answers at once.
struct Timed {
    info: ModelInfo,
    seen: mpsc::UnboundedSender<Seen>,
}

/// Reports when a hanging stream is dropped: the child's request was closed.
struct OnDrop(mpsc::UnboundedSender<Seen>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Seen::Closed(Instant::now()));
    }
}

fn calls(prompts: &[&str]) -> Vec<Result<ModelEvent, ModelError>> {
    let mut events = Vec::new();
    for (index, prompt) in prompts.iter().enumerate() {
        let arguments = serde_json::json!({"description": "bench", "prompt": prompt}).to_string();
        events.push(Ok(ModelEvent::ToolCallEnd {
            index: index as u32,
            id: format!("call_{index}"),
            name: "task".into(),
            arguments,
        }));
    }
    events.push(Ok(ModelEvent::Finish {
        reason: FinishReason::ToolCalls,
    }));
    events
}

impl Model for Timed {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn stream(
        &self,
        request: ModelRequest,
        _cancel: dsh_llm::CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        let first = request
            .messages
            .iter()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let answered = request
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }));
        let _ = self.seen.send(Seen::Asked(first.clone(), Instant::now()));
        // Made now, not when the future first runs: a request cancelled before that is
        // closed too.
        let guard = (first == "hang").then(|| OnDrop(self.seen.clone()));
        Box::pin(async move {
            let done = vec![
                Ok(ModelEvent::TextDelta("ok".into())),
                Ok(ModelEvent::Finish {
                    reason: FinishReason::Stop,
                }),
            ];
            let stream: ModelStream = match (first.as_str(), answered) {
                ("start", false) => Box::pin(futures::stream::iter(calls(&["ok"]))),
                ("four", false) => Box::pin(futures::stream::iter(calls(&["hang"; 4]))),
                ("hang", _) => Box::pin(futures::stream::unfold(guard, |guard| async move {
                    std::future::pending::<()>().await;
                    drop(guard);
                    None
                })),
                _ => Box::pin(futures::stream::iter(done)),
            };
            Ok(stream)
        })
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let at = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[at]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let kernel = Arc::new(Runtime::new());
        let (tx, mut seen) = mpsc::unbounded_channel();
        kernel
            .load(JsonlPlugin {
                config: JsonlConfig::new(dir.path()),
            })
            .await
            .unwrap();
        kernel.load(SessionStorePlugin).await.unwrap();
        let model = Timed {
            info: ModelInfo {
                provider: "bench".into(),
                model: "timed".into(),
                endpoint: None,
                replay: true,
            },
            seen: tx,
        };
        kernel
            .scope()
            .provide::<dyn Model>(Arc::new(model) as Arc<dyn Model>)
            .unwrap();
        kernel.load(ToolRegistryPlugin).await.unwrap();
        kernel
            .load(AgentLoopPlugin::new(LoopConfig::default()))
            .await
            .unwrap();
        kernel
            .load(TaskPlugin::new(TaskConfig::default()))
            .await
            .unwrap();
        let registry = kernel.scope().require::<dyn AgentRegistry>().unwrap();
        let new_parent =
            || registry.create(CreateAgent::new(kernel.scope().clone()).with_cwd(dir.path()));

        // Start: the parent's request to the child's first.
        let mut start = Vec::new();
        for _ in 0..200 {
            let parent = new_parent().await.unwrap();
            let ticket = parent.agent().send(UserMessage::user("start")).unwrap();
            let (mut asked, mut child) = (None, None);
            while child.is_none() {
                match seen.recv().await.unwrap() {
                    Seen::Asked(prompt, at) if prompt == "start" && asked.is_none() => {
                        asked = Some(at)
                    }
                    Seen::Asked(prompt, at) if prompt == "ok" => child = Some(at),
                    Seen::Asked(..) | Seen::Closed(_) => {}
                }
            }
            start.push(child.unwrap() - asked.unwrap());
            ticket.await;
            parent.dispose().await;
            while seen.try_recv().is_ok() {}
        }
        println!(
            "child start (task call to the child's first model request): p50 {:?}, p99 {:?}",
            percentile(&mut start, 0.5),
            percentile(&mut start, 0.99)
        );

        // Cancel: the parent's cancel to all four children's requests closed.
        let mut cancel = Vec::new();
        for _ in 0..50 {
            let parent = new_parent().await.unwrap();
            let ticket = parent.agent().send(UserMessage::user("four")).unwrap();
            let mut hanging = 0;
            while hanging < 4 {
                if let Seen::Asked(prompt, _) = seen.recv().await.unwrap()
                    && prompt == "hang"
                {
                    hanging += 1;
                }
            }
            let at = Instant::now();
            parent.agent().cancel(CancelCause::User);
            let mut last = at;
            let mut closed = 0;
            while closed < 4 {
                if let Seen::Closed(when) = seen.recv().await.unwrap() {
                    closed += 1;
                    last = last.max(when);
                }
            }
            cancel.push(last - at);
            ticket.await;
            parent.dispose().await;
            while seen.try_recv().is_ok() {}
        }
        println!(
            "parent cancel to 4 children's streams closed: p50 {:?}, p99 {:?}",
            percentile(&mut cancel, 0.5),
            percentile(&mut cancel, 0.99)
        );

        // Memory: what an idle child holds, over 100 of them.
        let parent = new_parent().await.unwrap();
        let before = live_bytes();
        let mut children = Vec::new();
        for n in 0..100 {
            let child = registry
                .create(
                    CreateAgent::new(kernel.scope().clone())
                        .with_cwd(dir.path())
                        .with_parent(parent.agent().id().clone(), format!("call_{n}")),
                )
                .await
                .unwrap();
            children.push(child);
        }
        let after = live_bytes();
        println!(
            "an idle child agent holds {} KiB",
            (after - before) / 100 / 1024
        );
        for child in children {
            child.dispose().await;
        }
        parent.dispose().await;
        kernel.shutdown().await;
    });
}
