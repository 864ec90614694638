//! Model-seam budgets: SSE decode throughput at 16 KiB and 256 KiB chunks, allocations per
//! streamed token, the overhead from `stream()` to the request reaching a loopback server,
//! and how long a cancel takes to end a stream that is waiting for data.
//! Run with `cargo bench -p dsh-llm-openai --bench decode`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    unsafe_code
)]
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsh_llm::{CancellationToken, Message, Model, ModelParams, ModelRequest};
use dsh_llm_openai::{ApiKey, OpenAiConfig, OpenAiModel, decode_body};
use dsh_test_providers::mock_model::{MockModelServer, MockResponse};
use futures::StreamExt;

/// Counts allocation calls, to show the per-token cost is constant.
struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A DeepSeek-shaped body of `tokens` text chunks.
fn body(tokens: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..tokens {
        out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1767225600,\"model\":\"deepseek-flash\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{}\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            i % 100
        ));
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    out.into_bytes()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn decode_all(bytes: &[u8], chunk: usize) -> usize {
    let pieces: Vec<std::io::Result<Bytes>> = bytes
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    decode_body(futures::stream::iter(pieces)).count().await
}

fn throughput(c: &mut Criterion) {
    let rt = rt();
    let bytes = body(20_000);
    let mut group = c.benchmark_group("decode");
    group
        .throughput(Throughput::Bytes(bytes.len() as u64))
        .sample_size(20);
    for (name, chunk) in [("16KiB", 16 * 1024), ("256KiB", 256 * 1024)] {
        group.bench_function(format!("sse_decode_20k_events_in_{name}_chunks"), |b| {
            b.iter(|| rt.block_on(decode_all(&bytes, chunk)))
        });
    }
    group.finish();

    for tokens in [10_000usize, 20_000] {
        let bytes = body(tokens);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        rt.block_on(decode_all(&bytes, 64 * 1024));
        let used = ALLOCATIONS.load(Ordering::Relaxed) - before;
        println!(
            "decode/allocations_per_token ({tokens} tokens): {:.1}",
            used as f64 / tokens as f64
        );
    }
}

/// A model aimed at `server`, and a one-message request.
fn client(server: &MockModelServer) -> (OpenAiModel, ModelRequest) {
    let mut config = OpenAiConfig::deepseek(Some(ApiKey::new("k")));
    config.base_url = server.base_url();
    let request = ModelRequest {
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
        params: ModelParams::default(),
        session_id: None,
    };
    (OpenAiModel::new(config).unwrap(), request)
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn first_byte(_c: &mut Criterion) {
    let rt = multi_thread();
    rt.block_on(async {
        let n = 200;
        let responses = (0..n).map(|_| MockResponse::sse_bytes(body(1))).collect();
        let server = MockModelServer::start(responses).await;
        let (model, request) = client(&server);
        let mut gaps: Vec<Duration> = Vec::new();
        for i in 0..n {
            let started = Instant::now();
            let stream = model
                .stream(request.clone(), CancellationToken::new())
                .await
                .unwrap();
            let _: Vec<_> = stream.collect().await;
            let arrived = server.requests()[i].at;
            gaps.push(arrived.saturating_duration_since(started));
        }
        gaps.sort();
        println!(
            "overhead/stream_to_request_on_wire: p50 {:?}, p90 {:?}",
            gaps[n / 2],
            gaps[n * 9 / 10]
        );
    });
}

fn cancel_latency(_c: &mut Criterion) {
    let rt = multi_thread();
    rt.block_on(async {
        let n = 100;
        // Each answer sends its first event and then nothing: the client is waiting on the
        // socket when the cancel comes.
        let responses = (0..n)
            .map(|_| {
                MockResponse::sse_bytes(body(1))
                    .segments(dsh_test_providers::mock_model::Split::PerLine)
                    .ending(dsh_test_providers::mock_model::Ending::Hang)
            })
            .collect();
        let server = MockModelServer::start(responses).await;
        let (model, request) = client(&server);
        let mut gaps: Vec<Duration> = Vec::new();
        for _ in 0..n {
            let cancel = CancellationToken::new();
            let mut stream = model.stream(request.clone(), cancel.clone()).await.unwrap();
            stream.next().await.unwrap().unwrap();
            let started = Instant::now();
            cancel.cancel();
            while stream.next().await.is_some() {}
            gaps.push(started.elapsed());
        }
        gaps.sort();
        println!(
            "cancel/until_the_stream_ends: p50 {:?}, p99 {:?}, max {:?}",
            gaps[n / 2],
            gaps[n * 99 / 100],
            gaps[n - 1]
        );
    });
}

criterion_group!(benches, throughput, first_byte, cancel_latency);
criterion_main!(benches);
