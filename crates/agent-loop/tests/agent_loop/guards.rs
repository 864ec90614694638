//! What the loop does about a model that runs away: a step that asks for more calls than one
//! step may run, a call repeated in circles, and an answer that streams only tool calls
//! (which its watchers see progress of).

use std::sync::{Arc, Mutex};

use dsh_agent::record::ModelProgressRecord;
use dsh_agent::{TurnEndReason, TurnOutcome};
use dsh_llm::FinishReason;
use dsh_session::{Ephemeral, Interest, Session, SessionEvent, SessionObserver};

use crate::support::*;

/// A leaked string: the scripted model takes `&'static str`.
fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

#[tokio::test]
async fn a_step_runs_at_most_its_limit_of_calls_and_the_model_is_told_of_the_rest() {
    let mut many: Vec<Act> = (0..20)
        .map(|i| {
            Act::Call(
                leak(format!("c{i}")),
                "echo",
                leak(format!(r#"{{"n":{i}}}"#)),
            )
        })
        .collect();
    many.push(Act::Finish(FinishReason::ToolCalls));
    let model = ScriptedModel::new(vec![many, say("done")]);
    let h = Harness::new(model.clone()).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    assert_eq!(seen.lock().unwrap().len(), 16, "the default limit ran");
    let events = agent.session().events();
    validate_log(&events);
    let results = results(&events);
    assert_eq!(results.len(), 20, "every call has its result");
    for result in &results[16..] {
        assert_eq!(result["error_code"], "too_many_calls");
        let note = result["content"].as_str().unwrap();
        assert!(
            note.contains("at most 16") && note.contains("made 20"),
            "{note}"
        );
    }
    handle.dispose().await;
}

#[tokio::test]
async fn a_call_repeated_in_circles_is_refused_once_then_ends_the_turn() {
    let same = || call("c", "echo", r#"{"path":"calc.py"}"#);
    let model = ScriptedModel::new(vec![same(), same(), same(), same(), say("never asked")]);
    let h = Harness::new(model.clone()).await;
    let probe = Probe::new("echo");
    let seen = probe.seen.clone();
    h.add_tool(probe);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(
        agent.send(user("go")).unwrap().await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::RepeatedCall {
                tool: "echo".into()
            }
        }
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "only the first two ran");
    assert_eq!(model.calls(), 4, "the loop stopped asking the model");
    let events = agent.session().events();
    validate_log(&events);
    let codes: Vec<String> = results(&events)
        .iter()
        .map(|r| r["error_code"].as_str().unwrap_or("ok").to_owned())
        .collect();
    assert_eq!(codes, ["ok", "ok", "repeated_call", "repeated_call"]);
    let warning = results(&events)[2]["content"].as_str().unwrap().to_owned();
    assert!(warning.contains("ends the turn"), "{warning}");
    handle.dispose().await;
}

/// Collects the `model/progress` notes a session publishes.
#[derive(Default)]
struct Notes(Mutex<Vec<ModelProgressRecord>>);

#[async_trait::async_trait]
impl SessionObserver for Notes {
    fn name(&self) -> &str {
        "notes"
    }

    fn on_append(&self, _: &Session, _: &Arc<SessionEvent>) {}

    fn on_ephemeral(&self, _: &Session, note: &Ephemeral) {
        if let Some(progress) = ModelProgressRecord::decode(note) {
            self.0.lock().unwrap().push(progress);
        }
    }
}

#[tokio::test]
async fn tool_calls_streaming_in_are_progress_for_watchers_and_never_in_the_log() {
    let big = leak(format!(r#"{{"content":"{}"}}"#, "x".repeat(10_000)));
    let model = ScriptedModel::new(vec![
        vec![
            Act::Call("c1", "echo", big),
            Act::Call("c2", "other", "{}"),
            Act::Finish(FinishReason::ToolCalls),
        ],
        say("done"),
    ]);
    let h = Harness::new(model).await;
    h.add_tool(Probe::new("echo"));
    let notes = Arc::new(Notes::default());
    h.store
        .subscribe(h.runtime.scope(), Interest::All, notes.clone())
        .unwrap();
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let notes = notes.0.lock().unwrap().clone();
    let last = notes.last().unwrap();
    assert_eq!((last.turn, last.step, last.tool_calls), (1, 1, 2));
    assert_eq!(last.tool, "other");
    assert!(
        notes
            .iter()
            .any(|n| n.tool_calls == 1 && n.argument_bytes >= 4096),
        "a long call's arguments show they grow: {notes:?}"
    );
    assert!(
        !kinds(&agent.session().events())
            .iter()
            .any(|k| k == "model/progress")
    );
    handle.dispose().await;
}
