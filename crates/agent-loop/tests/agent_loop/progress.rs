//! A running call's progress: shown to the session's live observers while the body runs,
//! every piece before the call's result, and never in the log.

use std::sync::{Arc, Mutex};

use dsh_agent::record::ToolProgressRecord;
use dsh_session::{Ephemeral, Interest, Session, SessionEvent, SessionObserver};
use dsh_tools::{Tool, ToolContext, ToolError, ToolOutput, ToolSchema};
use futures::future::BoxFuture;
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::*;

fn no_arguments(name: &str) -> ToolSchema {
    ToolSchema {
        name: name.into(),
        description: format!("{name}s"),
        parameters: json!({"type": "object"}),
    }
}

/// Reports "first", waits until the test has seen it, reports "second", and returns.
struct Talker {
    seen: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
}

impl Tool for Talker {
    fn schema(&self) -> ToolSchema {
        no_arguments("talk")
    }

    fn call(
        &self,
        _: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let mut seen = self.seen.lock().unwrap().take().unwrap();
        Box::pin(async move {
            cx.progress("first ");
            seen.recv().await;
            cx.progress("second");
            Ok(ToolOutput::text("first second"))
        })
    }
}

/// Records appends and progress notices in the order observers get them; tells the tool
/// when it saw the first piece.
struct Watcher {
    order: Mutex<Vec<String>>,
    saw_first: mpsc::UnboundedSender<()>,
}

#[async_trait::async_trait]
impl SessionObserver for Watcher {
    fn name(&self) -> &str {
        "watcher"
    }

    fn on_append(&self, _: &Session, event: &Arc<SessionEvent>) {
        self.order
            .lock()
            .unwrap()
            .push(event.kind.as_str().to_owned());
    }

    fn on_ephemeral(&self, _: &Session, note: &Ephemeral) {
        let piece = ToolProgressRecord::decode(note).unwrap();
        assert_eq!(
            (piece.turn, piece.step, piece.call_id.as_str()),
            (1, 1, "c1")
        );
        self.order
            .lock()
            .unwrap()
            .push(format!("progress:{}", piece.output));
        if piece.output.contains("first") {
            let _ = self.saw_first.send(());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_observers_while_the_call_runs_and_before_its_result() {
    let h = Harness::new(ScriptedModel::new(vec![
        call("c1", "talk", "{}"),
        say("done"),
    ]))
    .await;
    let (tx, rx) = mpsc::unbounded_channel();
    h.add_tool(Talker {
        seen: Mutex::new(Some(rx)),
    });
    let watcher = Arc::new(Watcher {
        order: Mutex::default(),
        saw_first: tx,
    });
    h.store
        .subscribe(h.runtime.scope(), Interest::All, watcher.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let order = watcher.order.lock().unwrap().clone();
    let at = |what: &str| order.iter().position(|o| o.starts_with(what)).unwrap();
    assert!(at("tool/call") < at("progress:first"), "{order:?}");
    assert!(at("progress:first") < at("tool/result"), "{order:?}");
    let shown: String = order
        .iter()
        .filter_map(|o| o.strip_prefix("progress:"))
        .collect();
    assert_eq!(
        shown, "first second",
        "every piece, before the result: {order:?}"
    );
    assert!(
        order[at("tool/result")..]
            .iter()
            .all(|o| !o.starts_with("progress:")),
        "{order:?}"
    );
    assert!(
        !kinds(&agent.session().events())
            .iter()
            .any(|k| k == "tool/progress"),
        "never in the log"
    );
    handle.dispose().await;
}

/// Reports [`PIECES`] pieces without awaiting in between, then says so.
struct Chatty {
    emitted: std::sync::mpsc::Sender<()>,
}

const PIECES: usize = 500;

impl Tool for Chatty {
    fn schema(&self) -> ToolSchema {
        no_arguments("chat")
    }

    fn call(
        &self,
        _: serde_json::Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let emitted = self.emitted.clone();
        Box::pin(async move {
            for i in 0..PIECES {
                cx.progress(&format!("{i} "));
            }
            emitted.send(()).unwrap();
            Ok(ToolOutput::text("chatted"))
        })
    }
}

/// Takes its time over the first notice: it returns only once the tool has emitted
/// everything.
struct Slow {
    notices: Mutex<Vec<String>>,
    emitted: Mutex<std::sync::mpsc::Receiver<()>>,
}

#[async_trait::async_trait]
impl SessionObserver for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn on_ephemeral(&self, _: &Session, note: &Ephemeral) {
        let piece = ToolProgressRecord::decode(note).unwrap();
        let first = {
            let mut notices = self.notices.lock().unwrap();
            notices.push(piece.output);
            notices.len() == 1
        };
        if first {
            self.emitted.lock().unwrap().recv().unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_observer_never_holds_the_tool_and_gets_the_pieces_coalesced() {
    let h = Harness::new(ScriptedModel::new(vec![
        call("c1", "chat", "{}"),
        say("done"),
    ]))
    .await;
    let (tx, rx) = std::sync::mpsc::channel();
    h.add_tool(Chatty { emitted: tx });
    let slow = Arc::new(Slow {
        notices: Mutex::default(),
        emitted: Mutex::new(rx),
    });
    h.store
        .subscribe(h.runtime.scope(), Interest::All, slow.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    // The observer blocks in its first notice until the tool emitted all its pieces: the
    // turn ends only if the tool never waited for the observer.
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let notices = slow.notices.lock().unwrap().clone();
    let want: String = (0..PIECES).map(|i| format!("{i} ")).collect();
    assert_eq!(notices.concat(), want, "every piece, in order");
    assert!(
        notices.len() <= 2,
        "{PIECES} pieces came as the first notice and one for the rest, not {}",
        notices.len()
    );
    handle.dispose().await;
}
