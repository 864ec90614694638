//! Random interleavings of every verb over scripts with tool calls: every ticket resolves
//! once, every turn is enclosed, no cancelled message reaches the log, follow-ups keep their
//! order, and the persisted log reloads to the same events.

use std::collections::HashMap;
use std::time::Duration;

use dsh_agent::{CancelCause, MessageId, TurnOutcome, TurnTicket};
use dsh_llm::FinishReason;
use dsh_session::SessionPersistence;
use proptest::prelude::*;

use crate::support::*;

#[derive(Clone, Debug)]
enum Op {
    Send,
    Steer,
    Inject,
    Cancel(CancelCause),
    Yield,
}

#[derive(Clone, Debug)]
enum Reply {
    Text,
    Tool,
    TwoTools,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Send),
        2 => Just(Op::Steer),
        1 => Just(Op::Inject),
        1 => Just(Op::Cancel(CancelCause::User)),
        1 => Just(Op::Cancel(CancelCause::Parent)),
        3 => Just(Op::Yield),
    ]
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![Just(Reply::Text), Just(Reply::Tool), Just(Reply::TwoTools)]
}

fn acts(reply: &Reply) -> Vec<Act> {
    match reply {
        Reply::Text => say("ok"),
        Reply::Tool => call("c1", "echo", "{}"),
        Reply::TwoTools => vec![
            Act::Call("c1", "pool", "{}"),
            Act::Call("c2", "pool", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
    }
}

async fn run_case(ops: Vec<Op>, replies: Vec<Reply>) {
    let model = ScriptedModel::new(replies.iter().map(acts).collect());
    let h = Harness::persistent(model).await;
    h.add_tool(Probe::new("echo"));
    let mut pool = Probe::new("pool");
    pool.parallel = true;
    h.add_tool(pool);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let mut tickets: Vec<(Op, usize, MessageId, TurnTicket)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let message = user(&format!("m{i}"));
        let ticket = match op {
            Op::Send => agent.send(message),
            Op::Steer => agent.steer(message),
            Op::Inject => agent.inject(message),
            Op::Cancel(cause) => {
                agent.cancel(*cause);
                continue;
            }
            Op::Yield => {
                tokio::task::yield_now().await;
                continue;
            }
        }
        .unwrap();
        tickets.push((op.clone(), i, ticket.message_id().clone(), ticket));
    }
    agent.when_idle().await;
    // Teardown resolves what is still parked (injected messages no turn picked up).
    handle.dispose().await;
    let mut outcomes = Vec::new();
    for (op, i, id, ticket) in tickets {
        let outcome = tokio::time::timeout(Duration::from_secs(20), ticket.outcome())
            .await
            .expect("every ticket resolves");
        outcomes.push((op, i, id, outcome));
    }
    let events = agent.session().events();
    validate_log(&events);
    let mut seen: HashMap<String, Vec<u64>> = HashMap::new();
    for event in events.iter().filter(|e| e.kind.as_str() == "user/message") {
        let d = data(event);
        seen.entry(d["message"]["id"].as_str().unwrap().to_owned())
            .or_default()
            .push(d["turn"].as_u64().unwrap());
    }
    let mut last_followup_turn = 0;
    for (op, i, id, outcome) in &outcomes {
        match outcome {
            TurnOutcome::Ended { turn, .. } => {
                assert_eq!(
                    seen.get(id.as_str()),
                    Some(&vec![u64::from(*turn)]),
                    "m{i} is in its turn exactly once"
                );
                if matches!(op, Op::Send) {
                    assert!(*turn > last_followup_turn, "follow-ups keep their order");
                    last_followup_turn = *turn;
                }
            }
            TurnOutcome::Discarded { .. } => {
                assert!(
                    !seen.contains_key(id.as_str()),
                    "discarded m{i} reached the log"
                );
            }
            TurnOutcome::Failed { failure } => panic!("m{i} ({op:?}) failed: {failure:?}"),
        }
    }
    // The persisted log is the same log.
    let persistence = h
        .runtime
        .scope()
        .require::<dyn SessionPersistence>()
        .unwrap();
    if events.is_empty() {
        // Nothing is stored before the first event.
        h.runtime.shutdown().await;
        return;
    }
    let stored = persistence
        .inspect(agent.id(), h.store.vocabulary())
        .await
        .unwrap();
    let kinds_of = |events: &[std::sync::Arc<dsh_session::SessionEvent>]| -> Vec<(String, String)> {
        events
            .iter()
            .map(|e| (e.kind.as_str().to_owned(), e.data.get().to_owned()))
            .collect()
    };
    assert_eq!(kinds_of(&stored.events), kinds_of(&events));
    h.runtime.shutdown().await;
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_interleavings_keep_every_invariant(
        ops in proptest::collection::vec(op(), 1..20),
        replies in proptest::collection::vec(reply(), 0..10),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(run_case(ops, replies));
    }
}
