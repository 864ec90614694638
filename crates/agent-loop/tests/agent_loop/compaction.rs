//! Compaction: a step whose context reached the threshold makes the next step summarise first
//! (no tools, the files the calls touched listed), record `context/compacted`, and send a
//! smaller history that opens with the summary.

use std::num::NonZeroU64;

use dsh_agent::AgentOverrides;
use dsh_agent::record::{CompactTrigger, CompactedRecord, Record, SUMMARY_PREFIX};
use dsh_llm::{FinishReason, Message, ModelEvent, Usage};

use crate::support::*;

fn reading_at(prompt_tokens: u64) -> Vec<Act> {
    vec![
        Act::Call("c1", "probe", r#"{"path":"src/a.rs"}"#),
        Act::Raw(ModelEvent::Usage(Usage {
            input_tokens: prompt_tokens,
            output_tokens: 10,
            ..Usage::default()
        })),
        Act::Finish(FinishReason::ToolCalls),
    ]
}

fn small_window() -> AgentOverrides {
    AgentOverrides {
        context_window: NonZeroU64::new(1000),
        compact_at: Some(0.8),
        ..AgentOverrides::default()
    }
}

/// Runs one prompt ("go") through an agent with a small window over `replies`; returns the
/// harness, the handle and the agent.
async fn one_turn(
    replies: Vec<Vec<Act>>,
    overrides: AgentOverrides,
) -> (
    Harness,
    dsh_agent::AgentHandle,
    std::sync::Arc<dyn dsh_agent::Agent>,
) {
    let h = Harness::new(ScriptedModel::new(replies)).await;
    h.add_tool(Probe::new("probe"));
    let handle = h.agent_with(overrides).await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    (h, handle, agent)
}

/// The session's `context/compacted` records.
fn compactions(agent: &std::sync::Arc<dyn dsh_agent::Agent>) -> Vec<CompactedRecord> {
    agent
        .session()
        .events()
        .iter()
        .filter_map(|e| match Record::decode(e) {
            Ok(Record::Compacted(r)) => Some(r),
            _ => None,
        })
        .collect()
}

fn text(message: &Message) -> String {
    match message {
        Message::System { content } | Message::User { content } => content.clone(),
        Message::Assistant { content, .. } | Message::Tool { content, .. } => content.clone(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_past_the_threshold_compacts_before_the_next_request() {
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(900),
            say("Goal: the test. Progress: read src/a.rs."),
            say("done"),
        ],
        small_window(),
    )
    .await;
    assert_eq!(h.model.calls(), 3);

    let summary = h.model.request(1);
    assert!(
        summary.tools.is_empty(),
        "the summary request offers no tools"
    );
    let asked = text(summary.messages.last().unwrap());
    assert!(asked.contains("## Remaining"), "{asked}");
    assert!(asked.contains("Files read:\nsrc/a.rs"), "{asked}");

    let next = h.model.request(2);
    let before = h.model.request(0);
    let opening = next
        .messages
        .iter()
        .find(|m| matches!(m, Message::User { .. }))
        .map(text)
        .unwrap();
    assert!(opening.starts_with(SUMMARY_PREFIX), "{opening}");
    assert!(opening.contains("Goal: the test."), "{opening}");
    assert!(
        opening.ends_with("go"),
        "the user's message is kept: {opening}"
    );
    assert!(
        !next
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. })),
        "the summarised call's result is gone from the request"
    );
    assert!(next.messages.len() <= before.messages.len() + 1);

    let compacted = compactions(&agent);
    assert_eq!(compacted.len(), 1);
    assert_eq!(compacted[0].trigger, CompactTrigger::Auto);
    assert_eq!(compacted[0].files_read, ["src/a.rs"]);
    assert_eq!(compacted[0].kept, ["go"]);
    assert_eq!(compacted[0].tokens_before, 910);
    // The transcript keeps everything: the call and its result are still in the log.
    assert!(kinds(&agent.session().events()).contains(&"tool/result".to_owned()));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_threshold_or_with_compaction_off_nothing_is_summarised() {
    for (prompt_tokens, compact_at) in [(700, 0.8), (990, 0.0)] {
        let h = Harness::new(ScriptedModel::new(vec![
            reading_at(prompt_tokens),
            say("done"),
        ]))
        .await;
        h.add_tool(Probe::new("probe"));
        let handle = h
            .agent_with(AgentOverrides {
                compact_at: Some(compact_at),
                ..small_window()
            })
            .await;
        let agent = handle.agent().clone();
        assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
        assert_eq!(h.model.calls(), 2, "{prompt_tokens} at {compact_at}");
        assert!(!kinds(&agent.session().events()).contains(&"context/compacted".to_owned()));
        handle.dispose().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_summary_leaves_the_history_whole_and_the_turn_goes_on() {
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(900),
            vec![Act::Fail(dsh_llm::ModelErrorKind::Server)],
            say("done"),
        ],
        small_window(),
    )
    .await;
    let next = h.model.request(2);
    assert!(
        next.messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. })),
        "the whole history is sent"
    );
    assert!(!kinds(&agent.session().events()).contains(&"context/compacted".to_owned()));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_as_too_long_compacts_and_runs_once_more() {
    let (h, handle, agent) = one_turn(
        vec![
            vec![Act::Fail(dsh_llm::ModelErrorKind::ContextOverflow)],
            say("Goal: the test."),
            say("done"),
        ],
        small_window(),
    )
    .await;
    assert_eq!(h.model.calls(), 3);
    let compacted = compactions(&agent);
    assert_eq!(compacted[0].trigger, CompactTrigger::Overflow);
    let retried = text(h.model.request(2).messages.last().unwrap());
    assert!(retried.starts_with(SUMMARY_PREFIX), "{retried}");
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_that_never_fits_ends_the_turn_saying_what_to_do() {
    let overflow = || vec![Act::Fail(dsh_llm::ModelErrorKind::ContextOverflow)];
    let h = Harness::new(ScriptedModel::new(vec![
        reading_at(100),
        overflow(),
        overflow(),
        overflow(),
    ]))
    .await;
    h.add_tool(Probe::new("probe"));
    let handle = h.agent_with(small_window()).await;
    let agent = handle.agent().clone();
    let outcome = agent.send(user("go")).unwrap().await;
    let dsh_agent::TurnOutcome::Ended {
        reason: dsh_agent::TurnEndReason::Error { failure },
        ..
    } = outcome
    else {
        panic!("{outcome:?}");
    };
    assert_eq!(failure.code, "context_overflow");
    assert!(
        failure.message.contains("Start a new session"),
        "{}",
        failure.message
    );
    assert!(
        failure.message.contains("context_window"),
        "{}",
        failure.message
    );
    // The step's request, then the summary once whole and once with the outputs dropped.
    assert_eq!(h.model.calls(), 4);
    let dropped = h.model.request(3);
    assert!(
        dropped
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { content, .. } if content.contains("dropped"))),
        "{:?}",
        dropped.messages
    );
    handle.dispose().await;
}

/// Answers every call with 100 KB of output.
struct Chatty;

impl dsh_tools::Tool for Chatty {
    fn schema(&self) -> dsh_tools::ToolSchema {
        dsh_tools::ToolSchema {
            name: "chatty".into(),
            description: "prints a lot".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    fn call(
        &self,
        _args: serde_json::Value,
        _cx: dsh_tools::ToolContext,
    ) -> futures::future::BoxFuture<'static, Result<dsh_tools::ToolOutput, dsh_tools::ToolError>>
    {
        Box::pin(async { Ok(dsh_tools::ToolOutput::text("y".repeat(100_000))) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_tool_output_is_pruned_in_the_request_and_kept_in_the_log() {
    let h = Harness::new(ScriptedModel::new(vec![
        call("c1", "chatty", r#"{"n":1}"#),
        call("c2", "chatty", r#"{"n":2}"#),
        call("c3", "chatty", r#"{"n":3}"#),
        say("done"),
    ]))
    .await;
    h.add_tool(Chatty);
    let handle = h
        .agent_with(AgentOverrides {
            keep_tool_output: Some(1000),
            ..AgentOverrides::default()
        })
        .await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let last = h.model.request(3);
    let outputs: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs.len(), 3);
    assert!(
        outputs[0].contains("(100000 bytes) was pruned"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("was pruned"));
    assert_eq!(outputs[2].len(), 100_000, "the latest output stays whole");
    let whole = agent
        .session()
        .events()
        .iter()
        .filter(|e| e.kind.as_str() == "tool/result")
        .all(|e| e.data.get().len() > 100_000);
    assert!(whole, "the log keeps every output");
    handle.dispose().await;
}

/// Records `context/compacting` notices; tells the test when the first arrives.
struct Compactings {
    seen: std::sync::Mutex<Vec<dsh_agent::record::CompactingRecord>>,
    started: tokio::sync::mpsc::UnboundedSender<()>,
}

impl Compactings {
    /// The states seen, in order.
    fn states(&self) -> Vec<dsh_agent::record::CompactingState> {
        let seen = self.seen.lock().unwrap();
        seen.iter().map(|n| n.state.clone()).collect()
    }
}

#[async_trait::async_trait]
impl dsh_session::SessionObserver for Compactings {
    fn name(&self) -> &str {
        "compactings"
    }

    fn on_ephemeral(&self, _: &dsh_session::Session, note: &dsh_session::Ephemeral) {
        if let Some(record) = dsh_agent::record::CompactingRecord::decode(note) {
            self.seen.lock().unwrap().push(record);
            let _ = self.started.send(());
        }
    }
}

fn watch_compactings(
    h: &Harness,
) -> (
    std::sync::Arc<Compactings>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let (started, rx) = tokio::sync::mpsc::unbounded_channel();
    let watcher = std::sync::Arc::new(Compactings {
        seen: std::sync::Mutex::default(),
        started,
    });
    h.store
        .subscribe(
            h.runtime.scope(),
            dsh_session::Interest::All,
            watcher.clone(),
        )
        .unwrap();
    (watcher, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_asked_for_is_a_turn_of_its_own_and_the_next_prompt_starts_from_it() {
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(100),
            say("first answer"),
            say("Goal: the test. Progress: read src/a.rs."),
            say("next answer"),
        ],
        small_window(),
    )
    .await;
    let (watcher, _) = watch_compactings(&h);
    let before = agent.session().events().len();
    assert_eq!(
        agent.compact(dsh_agent::MessageId::mint()).unwrap().await,
        completed(2)
    );
    assert_eq!(h.model.calls(), 3, "one call: the summary");
    assert!(h.model.request(2).tools.is_empty());
    let turn: Vec<String> = kinds(&agent.session().events()[before..]);
    assert_eq!(
        turn,
        [
            "turn/start",
            "step/start",
            "context/compacted",
            "step/end",
            "turn/end"
        ],
        "no user message and no model answer in the log: only the compaction"
    );
    let compacted = compactions(&agent);
    assert_eq!(compacted[0].trigger, CompactTrigger::Manual);
    assert_eq!(compacted[0].kept, ["go"]);
    assert!(compacted[0].tokens_after > 0);
    let notices = watcher.seen.lock().unwrap().clone();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(
        notices[0].state,
        dsh_agent::record::CompactingState::Started
    );

    assert_eq!(agent.send(user("and now?")).unwrap().await, completed(3));
    let next = h.model.request(3);
    // The kept message and the new one merge into the summary's user message.
    assert_eq!(next.messages.len(), 1, "{:?}", next.messages);
    let opening = text(&next.messages[0]);
    assert!(opening.starts_with(SUMMARY_PREFIX), "{opening}");
    assert!(opening.ends_with("go\n\nand now?"), "{opening}");
    assert!(
        !next
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }))
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_with_nothing_to_compact_ends_its_turn_saying_so() {
    let h = Harness::new(ScriptedModel::new(vec![say("answer"), say("Goal: x.")])).await;
    let handle = h.agent_with(small_window()).await;
    let agent = handle.agent().clone();
    let ended = agent.compact(dsh_agent::MessageId::mint()).unwrap().await;
    let dsh_agent::TurnOutcome::Ended {
        reason: dsh_agent::TurnEndReason::Error { failure },
        ..
    } = ended
    else {
        panic!("{ended:?}")
    };
    assert_eq!(failure.code, "compaction");
    assert!(
        failure.message.contains("nothing to compact"),
        "{}",
        failure.message
    );
    assert_eq!(h.model.calls(), 0, "no model call for an empty session");

    // Once compacted, compacting again with nothing new says so too.
    assert_eq!(agent.send(user("go")).unwrap().await, completed(2));
    assert_eq!(
        agent.compact(dsh_agent::MessageId::mint()).unwrap().await,
        completed(3)
    );
    let again = agent.compact(dsh_agent::MessageId::mint()).unwrap().await;
    assert!(
        matches!(&again, dsh_agent::TurnOutcome::Ended {
            reason: dsh_agent::TurnEndReason::Error { failure }, ..
        } if failure.message.contains("nothing new")),
        "{again:?}"
    );
    assert_eq!(h.model.calls(), 2);
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_is_cancelled_like_a_turn_and_changes_nothing() {
    let gate = Gate::default();
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(100),
            say("first answer"),
            vec![Act::Gate(gate.clone()), Act::Text("never recorded")],
            say("next answer"),
        ],
        small_window(),
    )
    .await;
    let (watcher, mut seen) = watch_compactings(&h);
    let ticket = agent.compact(dsh_agent::MessageId::mint()).unwrap();
    gate.entered().await;
    seen.recv().await.unwrap();
    assert!(agent.cancel(dsh_agent::CancelCause::User));
    assert_eq!(ticket.await, aborted(2, dsh_agent::CancelCause::User));
    gate.release();
    assert!(compactions(&agent).is_empty());
    assert_eq!(
        watcher.states(),
        [
            dsh_agent::record::CompactingState::Started,
            dsh_agent::record::CompactingState::Cancelled
        ]
    );
    // The history is whole: the next prompt sends the call's output again.
    assert_eq!(agent.send(user("again")).unwrap().await, completed(3));
    assert!(
        h.model
            .request(3)
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }))
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_the_model_reports_before_the_loop_sees_it_is_a_cancel_not_a_failure() {
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(100),
            say("first answer"),
            vec![Act::CancelThenFail],
        ],
        small_window(),
    )
    .await;
    let (watcher, mut seen) = watch_compactings(&h);
    let ticket = agent.compact(dsh_agent::MessageId::mint()).unwrap();
    seen.recv().await.unwrap();
    ticket.await;
    assert_eq!(
        watcher.states(),
        [
            dsh_agent::record::CompactingState::Started,
            dsh_agent::record::CompactingState::Cancelled
        ]
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_automatic_compaction_is_shown_as_it_starts() {
    let h = Harness::new(ScriptedModel::new(vec![
        reading_at(900),
        say("Goal: the test."),
        say("done"),
    ]))
    .await;
    h.add_tool(Probe::new("probe"));
    let (watcher, _) = watch_compactings(&h);
    let handle = h.agent_with(small_window()).await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let notices = watcher.seen.lock().unwrap().clone();
    assert_eq!(notices.len(), 1);
    assert_eq!(
        (notices[0].turn, notices[0].step, notices[0].trigger),
        (1, 2, CompactTrigger::Auto)
    );
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_failed_summary_the_next_is_asked_only_once_the_context_grew() {
    // 900 of 1,000 tokens: due. The summary fails; the next call reports 920, which is less
    // than a twentieth of the window past 910: not asked again. Then 980: asked again.
    let h = Harness::new(ScriptedModel::new(vec![
        reading_at(900),
        vec![Act::Fail(dsh_llm::ModelErrorKind::Server)],
        reading_at(910),
        reading_at(970),
        say("Goal: the test."),
        say("done"),
    ]))
    .await;
    h.add_tool(Probe::new("probe"));
    let handle = h.agent_with(small_window()).await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("go")).unwrap().await, completed(1));
    let summaries: Vec<usize> = (0..h.model.calls())
        .filter(|i| h.model.request(*i).tools.is_empty())
        .collect();
    assert_eq!(
        summaries,
        [1, 4],
        "asked after 910, not after 920, again after 980"
    );
    assert_eq!(compactions(&agent).len(), 1);
    handle.dispose().await;
}

/// Hooks at a compaction: `PreCompact` asks the summary to keep something, `SessionStart`
/// (`compact`) speaks to the model that goes on from it.
struct AtCompaction;

#[async_trait::async_trait]
impl dsh_hooks::Hooks for AtCompaction {
    fn wants(&self, event: dsh_hooks::HookEvent, subjects: &[&str]) -> bool {
        match event {
            dsh_hooks::HookEvent::PreCompact => subjects == ["manual"],
            dsh_hooks::HookEvent::SessionStart => subjects == ["compact"],
            _ => false,
        }
    }

    async fn run(
        &self,
        input: dsh_hooks::HookInput,
        _cancel: dsh_kernel::CancellationToken,
    ) -> dsh_hooks::HookVerdict {
        let context = match input.fields {
            dsh_hooks::EventFields::PreCompact { .. } => "the ticket is DSH-42",
            _ => "after the summary, read NOTES.md again",
        };
        dsh_hooks::HookVerdict {
            context: vec![context.into()],
            ..dsh_hooks::HookVerdict::default()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_add_to_the_summary_request_and_speak_after_a_compaction() {
    let (h, handle, agent) = one_turn(
        vec![
            reading_at(100),
            say("first answer"),
            say("Goal: the test."),
            say("next answer"),
        ],
        small_window(),
    )
    .await;
    h.runtime
        .scope()
        .provide::<dyn dsh_hooks::HookSource>(std::sync::Arc::new(dsh_hooks::FixedHooks(
            std::sync::Arc::new(AtCompaction),
        ))
            as std::sync::Arc<dyn dsh_hooks::HookSource>)
        .unwrap();
    assert_eq!(
        agent.compact(dsh_agent::MessageId::mint()).unwrap().await,
        completed(2)
    );
    let summary = format!("{:?}", h.model.request(2).messages);
    assert!(summary.contains("the ticket is DSH-42"), "{summary}");
    assert_eq!(agent.send(user("and now?")).unwrap().await, completed(3));
    let next = format!("{:?}", h.model.request(3).messages);
    assert!(
        next.contains("after the summary, read NOTES.md again"),
        "{next}"
    );
    handle.dispose().await;
}
