//! Agent-loop benchmarks. Targets: an idle agent retains at most 32 KiB (agent state, handle,
//! registry entry, scope and its empty live session); `send` reaches the model's `stream()` in
//! at most 200 µs p50 (idle agent, 10-message history, no persistence, multi-thread runtime);
//! 10,000 idle agents live in one process and are disposed concurrently. Run with
//! `cargo bench -p dsh-agent-loop --bench agent_loop`; the memory and scale figures are
//! printed on stderr.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use dsh_test_support::heap::{LiveBytes, live_bytes};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_agent::{AgentHandle, AgentRegistry, CreateAgent, UserMessage};
use dsh_agent_loop::{AgentLoopPlugin, LoopConfig};
use dsh_kernel::Runtime;
use dsh_llm::{FinishReason, Model, ModelError, ModelEvent, ModelInfo, ModelRequest, ModelStream};
use dsh_session::SessionStore;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

#[global_allocator]
static HEAP: LiveBytes = LiveBytes;

/// Answers at once, and reports when each request arrived.
struct Instant0 {
    info: ModelInfo,
    arrived: mpsc::UnboundedSender<Instant>,
}

impl Model for Instant0 {
    fn info(&self) -> &ModelInfo {
        &self.info
    }
    fn stream(
        &self,
        _request: ModelRequest,
        _cancel: dsh_llm::CancellationToken,
    ) -> BoxFuture<'static, Result<ModelStream, ModelError>> {
        let _ = self.arrived.send(Instant::now());
        Box::pin(async {
            let events = vec![
                Ok(ModelEvent::TextDelta("ok".into())),
                Ok(ModelEvent::Finish {
                    reason: FinishReason::Stop,
                }),
            ];
            Ok(Box::pin(futures::stream::iter(events)) as ModelStream)
        })
    }
}

async fn wired(arrived: mpsc::UnboundedSender<Instant>) -> (Arc<Runtime>, Arc<dyn AgentRegistry>) {
    let runtime = Arc::new(Runtime::new());
    runtime
        .scope()
        .provide::<SessionStore>(SessionStore::new())
        .unwrap();
    let model = Arc::new(Instant0 {
        info: ModelInfo {
            provider: "bench".into(),
            model: "instant".into(),
            endpoint: None,
            replay: true,
        },
        arrived,
    });
    runtime.scope().provide::<dyn Model>(model).unwrap();
    runtime.load(dsh_tools::ToolRegistryPlugin).await.unwrap();
    runtime
        .load(AgentLoopPlugin::new(LoopConfig::default()))
        .await
        .unwrap();
    let registry = runtime.scope().require::<dyn AgentRegistry>().unwrap();
    (runtime, registry)
}

async fn idle_agent(runtime: &Runtime, registry: &Arc<dyn AgentRegistry>) -> AgentHandle {
    registry
        .create(CreateAgent::new(runtime.scope().clone()).with_cwd("/bench"))
        .await
        .unwrap()
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples[((samples.len() as f64 - 1.0) * p) as usize]
}

fn bench_send_to_request(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tx, mut arrived) = mpsc::unbounded_channel();
    let (runtime, registry) = rt.block_on(wired(tx));
    // Each sample gets a fresh agent with a 10-message history (five turns), so the history
    // does not grow with the sample count.
    let fresh = |rt: &tokio::runtime::Runtime, arrived: &mut mpsc::UnboundedReceiver<Instant>| {
        let handle = rt.block_on(idle_agent(&runtime, &registry));
        for i in 0..5 {
            let ticket = handle
                .agent()
                .send(UserMessage::user(format!("warm {i}")))
                .unwrap();
            rt.block_on(ticket.outcome());
            rt.block_on(arrived.recv());
        }
        handle
    };
    let mut samples = Vec::new();
    c.bench_function("agent_loop/send_to_request", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let handle = fresh(&rt, &mut arrived);
                let agent = handle.agent().clone();
                let sent = Instant::now();
                let ticket = agent.send(UserMessage::user("go")).unwrap();
                let at = rt.block_on(arrived.recv()).unwrap();
                rt.block_on(ticket.outcome());
                let took = at.duration_since(sent);
                samples.push(took);
                total += took;
                rt.block_on(handle.dispose());
            }
            total
        })
    });
    let (p50, p99) = (
        percentile(&mut samples, 0.5),
        percentile(&mut samples, 0.99),
    );
    eprintln!(
        "send_to_request over {} samples: p50 {p50:?}, p99 {p99:?}",
        samples.len()
    );
    rt.block_on(runtime.shutdown());
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4)
}

fn bench_idle_agents(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tx, arrived) = mpsc::unbounded_channel();
    // The arrival reports are not needed here.
    drop(arrived);
    let (runtime, registry) = rt.block_on(wired(tx));
    // Footprint: heap retained per idle agent, over 1,000.
    let before = live_bytes();
    let handles: Vec<_> = (0..1000)
        .map(|_| rt.block_on(idle_agent(&runtime, &registry)))
        .collect();
    let per_agent = (live_bytes() - before) / 1000;
    eprintln!("idle footprint: {per_agent} bytes retained per idle agent (1,000 agents)");
    rt.block_on(futures::future::join_all(
        handles.iter().map(AgentHandle::dispose),
    ));
    drop(handles);

    // Scale: 10,000 idle agents, created, then all disposed concurrently.
    let rss_before = rss_kib();
    let begun = Instant::now();
    let handles: Vec<_> = rt.block_on(async {
        let creating = (0..10_000).map(|_| idle_agent(&runtime, &registry));
        futures::future::join_all(creating).await
    });
    let created = begun.elapsed();
    let rss_with = rss_kib();
    let listed = registry.list().len();
    let begun = Instant::now();
    rt.block_on(futures::future::join_all(handles.iter().map(|h| {
        h.agent()
            .send(UserMessage::user("one each"))
            .unwrap()
            .outcome()
    })));
    let sent = begun.elapsed();
    let begun = Instant::now();
    rt.block_on(futures::future::join_all(
        handles.iter().map(AgentHandle::dispose),
    ));
    let disposed = begun.elapsed();
    eprintln!(
        "10,000 idle agents: created in {created:?}, RSS +{} KiB ({} listed), one send to each completed in {sent:?}, all disposed concurrently in {disposed:?}; registry empty: {}",
        rss_with.saturating_sub(rss_before),
        listed,
        registry.list().is_empty()
    );
    drop(handles);
    let mut group = c.benchmark_group("agent_loop");
    group.sample_size(20);
    group.bench_function("create_and_dispose_one_idle_agent", |b| {
        b.iter(|| {
            rt.block_on(async {
                let handle = idle_agent(&runtime, &registry).await;
                handle.dispose().await;
            })
        })
    });
    group.finish();
    rt.block_on(runtime.shutdown());
}

criterion_group!(benches, bench_send_to_request, bench_idle_agents);
criterion_main!(benches);
