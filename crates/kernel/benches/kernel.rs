//! Kernel micro-benchmarks: service lookup, event emit to ten listeners, and scope create plus
//! dispose with ten disposers. Targets (issue "Workspace foundation"): lookup ≤ 50 ns, emit ≤
//! 1 µs, create + dispose ≤ 5 µs. Run with `cargo bench -p dsh-kernel --bench kernel`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_kernel::Runtime;

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

criterion_group!(benches, bench_kernel);
criterion_main!(benches);
