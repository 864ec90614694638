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

/// Reports "first", waits until the test has seen it, reports "second", and returns.
struct Talker {
    seen: Mutex<Option<mpsc::UnboundedReceiver<()>>>,
}

impl Tool for Talker {
    fn schema(&self) -> ToolSchema {
        ToolSchema {
            name: "talk".into(),
            description: "talks".into(),
            parameters: json!({"type": "object"}),
        }
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
