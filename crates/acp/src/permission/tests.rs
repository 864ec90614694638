//! The gate's half of withdrawing a question when the turn is cancelled while it is asked.

use super::*;
use dsh_session::SessionId;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};
use tokio_util::sync::CancellationToken;

struct Rig {
    gate: Arc<SessionGate>,
    queue: mpsc::UnboundedReceiver<Item>,
    wire: tokio::io::Lines<BufReader<DuplexStream>>,
    outgoing: Arc<OutgoingTable>,
}

fn rig() -> Rig {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (out, writing) = crate::transport::writer(ours, CancellationToken::new());
    tokio::spawn(writing);
    let (queue, items) = mpsc::unbounded_channel();
    let outgoing = Arc::new(OutgoingTable::default());
    let gate = Arc::new(SessionGate {
        mode: std::sync::Arc::new(parking_lot::Mutex::new(dsh_tools::PermissionMode::Ask)),
        queue,
        grants: Arc::default(),
        outgoing: outgoing.clone(),
        out,
        one_at_a_time: Mutex::new(()),
    });
    Rig {
        gate,
        queue: items,
        wire: BufReader::new(theirs).lines(),
        outgoing,
    }
}

fn request(cancel: &CancellationToken) -> ApprovalRequest {
    ApprovalRequest {
        session_id: SessionId::mint(),
        turn: 1,
        step: 1,
        call_id: "call".into(),
        tool: "bash".into(),
        arguments: json!({"command": "true"}),
        effect: dsh_tools::Effect::Execute,
        preview: None,
        shown: None,
        cancel: cancel.clone(),
        subagent: None,
    }
}

/// Starts a decision and returns it with the reply the session's path would answer.
async fn asking(
    rig: &mut Rig,
    cancel: &CancellationToken,
) -> (
    tokio::task::JoinHandle<ApprovalDecision>,
    oneshot::Sender<Option<(i64, crate::outgoing::Answer)>>,
) {
    let gate = rig.gate.clone();
    let request = request(cancel);
    let deciding = tokio::spawn(async move { gate.decide(request).await });
    let Some(Item::Permission { reply, .. }) = rig.queue.recv().await else {
        panic!("the gate asks on the session's path");
    };
    (deciding, reply)
}

#[tokio::test]
async fn a_question_sent_as_the_turn_is_cancelled_is_withdrawn() {
    let mut rig = rig();
    let cancel = CancellationToken::new();
    let (deciding, reply) = asking(&mut rig, &cancel).await;
    // The question went out and its id is handed back at the moment the turn is cancelled:
    // the gate sees both at once.
    let (id, answer) = rig.outgoing.register();
    assert!(reply.send(Some((id, answer))).is_ok());
    cancel.cancel();
    assert_eq!(deciding.await.ok(), Some(ApprovalDecision::Cancelled));
    assert_withdrawn(rig, id).await;
}

/// The one frame the writer was left with is the withdrawal of `id`. The writer holds nothing
/// else: if no withdrawal was queued, the read ends empty at once instead of waiting.
async fn assert_withdrawn(rig: Rig, id: i64) {
    let Rig { gate, mut wire, .. } = rig;
    drop(gate);
    let line = wire.next_line().await.ok().flatten().unwrap_or_default();
    let frame: Value = serde_json::from_str(&line).unwrap_or_default();
    assert_eq!(frame["method"], "$/cancel_request", "{line}");
    assert_eq!(frame["params"]["requestId"], id);
}

#[tokio::test]
async fn a_gate_cancelled_before_its_question_is_sent_tells_the_path_not_to_ask() {
    let mut rig = rig();
    let cancel = CancellationToken::new();
    let (deciding, reply) = asking(&mut rig, &cancel).await;
    cancel.cancel();
    assert_eq!(deciding.await.ok(), Some(ApprovalDecision::Cancelled));
    assert!(
        reply.is_closed(),
        "the path sees that nobody waits for the question"
    );
}

/// The agent loop races the gate against the turn's token and drops the gate's future when
/// the token wins: a question whose id was handed back but not yet read is withdrawn too.
#[tokio::test]
async fn a_question_sent_as_the_loop_drops_the_gate_is_withdrawn() {
    let mut rig = rig();
    let cancel = CancellationToken::new();
    let gate = rig.gate.clone();
    let mut deciding = Box::pin(gate.decide(request(&cancel)));
    // Polled once: the question is queued on the session's path.
    assert!(futures::poll!(deciding.as_mut()).is_pending());
    let Some(Item::Permission { reply, .. }) = rig.queue.recv().await else {
        panic!("the gate asks on the session's path");
    };
    let (id, answer) = rig.outgoing.register();
    assert!(reply.send(Some((id, answer))).is_ok());
    // The loop saw the cancel first and never polls the gate again.
    drop(deciding);
    drop(gate);
    assert_withdrawn(rig, id).await;
}
