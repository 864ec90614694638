//! Typed events: delivery order, containment, reentrancy, subscriptions ending with scopes.

use std::time::Duration;

use dsh_kernel::Runtime;

use crate::support::{Log, capture_logs};

#[derive(Debug)]
struct Ping(u32);

#[derive(Debug)]
struct Pong(u32);

#[tokio::test]
async fn listeners_receive_events_of_their_type_in_order() {
    let runtime = Runtime::new();
    let log = Log::default();
    for name in ["a", "b"] {
        let log = log.clone();
        runtime
            .scope()
            .on(move |p: &Ping| log.push(format!("{name}:{}", p.0)))
            .unwrap();
    }
    let pongs = log.clone();
    runtime
        .scope()
        .on(move |p: &Pong| pongs.push(format!("pong:{}", p.0)))
        .unwrap();

    runtime.scope().emit(Ping(1));
    runtime.scope().emit(Ping(2));
    runtime.scope().emit(Pong(3));
    runtime.scope().emit("nobody listens to str");

    assert_eq!(log.take(), ["a:1", "b:1", "a:2", "b:2", "pong:3"]);
}

#[tokio::test]
async fn a_panicking_or_failing_listener_breaks_neither_emitter_nor_others() {
    let (logs, _guard) = capture_logs();
    let runtime = Runtime::new();
    let log = Log::default();
    let noisy = runtime.scope().child("noisy").unwrap();
    let before = log.clone();
    runtime
        .scope()
        .on(move |p: &Ping| before.push(format!("before:{}", p.0)))
        .unwrap();
    noisy
        .on(|p: &Ping| -> () { panic!("listener exploded on {}", p.0) })
        .unwrap();
    noisy
        .on(|_: &Ping| Err::<(), _>("listener refused"))
        .unwrap();
    let after = log.clone();
    runtime
        .scope()
        .on(move |p: &Ping| after.push(format!("after:{}", p.0)))
        .unwrap();

    runtime.scope().emit(Ping(1));
    runtime.scope().emit(Ping(2));

    assert_eq!(log.take(), ["before:1", "after:1", "before:2", "after:2"]);
    let text = logs.text();
    assert!(text.contains("listener exploded on 1"), "{text}");
    assert!(text.contains("listener refused"), "{text}");
    assert!(text.contains("root/noisy"), "{text}");
}

#[tokio::test]
async fn subscriptions_end_with_their_scope() {
    let runtime = Runtime::new();
    let log = Log::default();
    let scope = runtime.scope().child("listener").unwrap();
    let seen = log.clone();
    scope
        .on(move |p: &Ping| seen.push(p.0.to_string()))
        .unwrap();
    let kept = log.clone();
    runtime
        .scope()
        .on(move |p: &Ping| kept.push(format!("root:{}", p.0)))
        .unwrap();

    runtime.scope().emit(Ping(1));
    scope.dispose().await;
    runtime.scope().emit(Ping(2));

    assert_eq!(log.take(), ["1", "root:1", "root:2"]);
}

#[tokio::test]
async fn a_listener_may_emit_and_subscribe_without_deadlock() {
    let runtime = Runtime::new();
    let log = Log::default();
    let scope = runtime.scope().clone();
    let relay = scope.clone();
    scope
        .on(move |p: &Ping| {
            relay.emit(Pong(p.0 * 10));
            // A subscription made during delivery applies from the next emit on.
            let late = Log::default();
            relay.on(move |_: &Pong| late.push("x")).unwrap();
        })
        .unwrap();
    let pongs = log.clone();
    scope
        .on(move |p: &Pong| pongs.push(p.0.to_string()))
        .unwrap();

    scope.emit(Ping(4));
    assert_eq!(log.take(), ["40"]);
}

#[derive(Debug)]
struct Step(u32);

#[tokio::test]
async fn an_event_emitted_during_delivery_reaches_every_listener_after_the_current_one() {
    let runtime = Runtime::new();
    let log = Log::default();
    let relay = runtime.scope().clone();
    let first = log.clone();
    runtime
        .scope()
        .on(move |s: &Step| {
            first.push(format!("first:{}", s.0));
            if s.0 < 2 {
                relay.emit(Step(s.0 + 1));
                relay.emit(Pong(s.0));
            }
        })
        .unwrap();
    let second = log.clone();
    runtime
        .scope()
        .on(move |s: &Step| second.push(format!("second:{}", s.0)))
        .unwrap();
    let pongs = log.clone();
    runtime
        .scope()
        .on(move |p: &Pong| pongs.push(format!("pong:{}", p.0)))
        .unwrap();

    runtime.scope().emit(Step(0));

    assert_eq!(
        log.take(),
        [
            "first:0", "second:0", "first:1", "second:1", "pong:0", "first:2", "second:2", "pong:1"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_listener_is_called_once_its_scopes_dispose_has_returned() {
    let runtime = Runtime::new();
    let log = Log::default();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let entered_tx = std::sync::Mutex::new(entered_tx);
    let release_rx = std::sync::Mutex::new(release_rx);
    // The first listener holds the delivery open until released.
    runtime
        .scope()
        .on(move |_: &Ping| {
            entered_tx.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
        })
        .unwrap();
    let renderer = runtime.scope().child("renderer").unwrap();
    let rendered = log.clone();
    renderer
        .on(move |_: &Ping| rendered.push("renderer called"))
        .unwrap();
    let emitter_scope = runtime.scope().clone();
    let emitter = std::thread::spawn(move || emitter_scope.emit(Ping(1)));
    tokio::task::spawn_blocking(move || entered_rx.recv().unwrap())
        .await
        .unwrap();

    let disposing = {
        let renderer = renderer.clone();
        let log = log.clone();
        tokio::spawn(async move {
            renderer.dispose().await;
            log.push("dispose returned");
        })
    };
    // Give a dispose that does not wait for the delivery the chance to return early.
    let early = tokio::time::timeout(Duration::from_millis(50), async {
        while !disposing.is_finished() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    release_tx.send(()).unwrap();
    disposing.await.unwrap();
    tokio::task::spawn_blocking(move || emitter.join().unwrap())
        .await
        .unwrap();

    let order = log.take();
    let returned = order.iter().position(|e| e == "dispose returned").unwrap();
    assert!(
        order[returned + 1..].is_empty(),
        "called after dispose returned: {order:?} (dispose returned early: {})",
        early.is_ok()
    );
}
