//! Kernel micro-benchmarks: service lookup, event emit to ten listeners, scope create plus
//! dispose with ten disposers, and the teardown of many siblings at once. Targets: lookup ≤
//! 50 ns, emit ≤ 1 µs, create + dispose ≤ 5 µs; a scope with 1,000 children whose disposers
//! each await a 10 ms timer disposes in about 10 ms (the slowest child, not the sum), and so
//! does an owner of 1,000 teardowns. Run with `cargo bench -p dsh-kernel --bench kernel`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_kernel::{Runtime, Teardown};

trait Greeter: Send + Sync {
    fn greet(&self) -> usize;
}

struct Hello;

impl Greeter for Hello {
    fn greet(&self) -> usize {
        5
    }
}

struct Ping(u64);

fn bench_kernel(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let runtime = Runtime::new();
    let scope = runtime.scope().clone();
    scope.provide::<dyn Greeter>(Arc::new(Hello)).unwrap();
    // A few unrelated services, so the lookup is not in a one-entry table.
    scope.provide::<String>(Arc::new("s".into())).unwrap();
    scope.provide::<u64>(Arc::new(7)).unwrap();

    c.bench_function("service_lookup", |b| {
        b.iter(|| black_box(scope.get::<dyn Greeter>()).map(|g| g.greet()))
    });

    let sink = Arc::new(std::sync::atomic::AtomicU64::new(0));
    for _ in 0..10 {
        let sink = sink.clone();
        scope
            .on(move |p: &Ping| {
                sink.fetch_add(p.0, std::sync::atomic::Ordering::Relaxed);
            })
            .unwrap();
    }
    c.bench_function("event_emit_10_listeners", |b| {
        b.iter(|| scope.emit(black_box(Ping(1))))
    });

    c.bench_function("scope_create_dispose_10_disposers", |b| {
        b.iter(|| {
            rt.block_on(async {
                let child = scope.child("bench").unwrap();
                for _ in 0..10 {
                    child.add_disposer(|| async {}).unwrap();
                }
                child.dispose().await;
            })
        })
    });
}

fn bench_teardown_at_scale(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runtime = Runtime::new();
    let mut group = c.benchmark_group("teardown_at_scale");
    group.sample_size(20);
    group.bench_function("dispose_1000_children_each_awaiting_10ms", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let parent = runtime.scope().child("agents").unwrap();
                for i in 0..1000 {
                    let child = parent.child(&format!("agent-{i}")).unwrap();
                    child
                        .add_disposer(|| tokio::time::sleep(std::time::Duration::from_millis(10)))
                        .unwrap();
                }
                let begun = std::time::Instant::now();
                rt.block_on(parent.dispose());
                total += begun.elapsed();
            }
            total
        })
    });
    group.bench_function("owner_of_1000_teardowns_each_awaiting_10ms", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                let owner = runtime.scope().child("owner").unwrap();
                rt.block_on(async {
                    for i in 0..1000 {
                        let agent = runtime.scope().detached(&format!("agent-{i}")).unwrap();
                        let teardown = Teardown::for_scope(&agent, |_| async {
                            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        })
                        .unwrap();
                        owner.own(&teardown).unwrap();
                    }
                });
                let begun = std::time::Instant::now();
                rt.block_on(owner.dispose());
                total += begun.elapsed();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench_kernel, bench_teardown_at_scale);
criterion_main!(benches);
