//! The system message: built by the context service, recorded before the first turn, sent on
//! every request, and kept byte-identical across a resume while its sources are unchanged.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use dsh_agent::record::{InstructionSource, InstructionsRecord, SourceKind};
use dsh_agent::{
    AgentOverrides, Audience, ContextBuilder, ContextError, ContextRequest, ResumeAgent,
};
use dsh_llm::Message;

use crate::support::*;

/// A context service whose answer the test sets: `hash` stands for the sources' content,
/// `text` for what was composed from them.
#[derive(Default)]
struct FakeContext {
    hash: Mutex<String>,
    text: Mutex<String>,
    fail: Mutex<bool>,
    requests: Mutex<Vec<ContextRequest>>,
}

impl FakeContext {
    fn set(&self, hash: &str, text: &str) {
        *self.hash.lock().unwrap() = hash.into();
        *self.text.lock().unwrap() = text.into();
    }
}

#[async_trait]
impl ContextBuilder for FakeContext {
    async fn build(&self, request: ContextRequest) -> Result<InstructionsRecord, ContextError> {
        if *self.fail.lock().unwrap() {
            return Err(ContextError {
                message: "system_prompt_file /gone.md: No such file".into(),
            });
        }
        let caller = request.caller.clone();
        let mut text = self.text.lock().unwrap().clone();
        if let Some(caller) = &caller {
            text.push_str(&format!("\n{}", caller.text));
        }
        self.requests.lock().unwrap().push(request);
        Ok(InstructionsRecord {
            text,
            environment: None,
            sources: vec![InstructionSource {
                kind: SourceKind::Project,
                path: "/work/AGENTS.md".into(),
                sha256: self.hash.lock().unwrap().clone(),
                bytes: 1,
                truncated: false,
                skipped: None,
            }],
            caller,
            warnings: Vec::new(),
        })
    }
}

fn provide(h: &Harness) -> Arc<FakeContext> {
    let context = Arc::new(FakeContext::default());
    context.set("h1", "SYSTEM ONE");
    h.runtime
        .scope()
        .provide::<dyn ContextBuilder>(context.clone())
        .unwrap();
    context
}

fn system(request: &dsh_llm::ModelRequest) -> Option<String> {
    match request.messages.first() {
        Some(Message::System { content }) => Some(content.clone()),
        _ => None,
    }
}

/// Resumes `id` with a new agent and runs one prompt to its completion as turn `turn`.
async fn resume_and_send(
    h: &Harness,
    id: &dsh_session::SessionId,
    text: &str,
    turn: u32,
) -> dsh_agent::AgentHandle {
    let resumed = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), id.clone()))
        .await
        .unwrap();
    assert_eq!(
        resumed.agent().send(user(text)).unwrap().await,
        completed(turn)
    );
    resumed
}

fn count(events: &[Arc<dsh_session::SessionEvent>], kind: &str) -> usize {
    kinds(events).iter().filter(|k| *k == kind).count()
}

#[tokio::test]
async fn the_text_is_recorded_before_the_first_turn_and_sent_on_every_request() {
    let model = ScriptedModel::new(vec![call("c1", "echo", "{}"), say("done"), say("again")]);
    let h = Harness::new(model.clone()).await;
    h.add_tool(Probe::new("echo"));
    let context = provide(&h);
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("one")).unwrap().await, completed(1));
    assert_eq!(agent.send(user("two")).unwrap().await, completed(2));
    let events = agent.session().events();
    assert_eq!(kinds(&events)[..2], ["context/instructions", "turn/start"]);
    assert!(events[0].ignorable, "an older dsh may skip the record");
    assert_eq!(
        count(&events, "context/instructions"),
        1,
        "built once per agent life"
    );
    for i in 0..3 {
        assert_eq!(
            system(&model.request(i)).as_deref(),
            Some("SYSTEM ONE"),
            "request {i}"
        );
    }
    let asked = context.requests.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].cwd, std::path::Path::new("/work"));
    assert_eq!(asked[0].model, "scripted");
    assert_eq!(asked[0].audience, Audience::Terminal);
    assert_eq!(
        asked[0]
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["echo"]
    );
    validate_log(&events);
    handle.dispose().await;
}

#[tokio::test]
async fn a_resume_sends_the_recorded_text_until_a_source_changes() {
    let model = ScriptedModel::new(vec![say("a"), say("b"), say("c")]);
    let h = Harness::persistent(model.clone()).await;
    let context = provide(&h);
    let handle = h.agent().await;
    let id = handle.agent().id().clone();
    assert_eq!(
        handle.agent().send(user("one")).unwrap().await,
        completed(1)
    );
    handle.dispose().await;

    // Same sources, a text that would differ (a new branch): the recorded text is sent.
    context.set("h1", "SYSTEM ONE ON ANOTHER BRANCH");
    let resumed = resume_and_send(&h, &id, "two", 2).await;
    assert_eq!(system(&model.request(1)).as_deref(), Some("SYSTEM ONE"));
    assert_eq!(
        count(&resumed.agent().session().events(), "context/instructions"),
        1
    );
    resumed.dispose().await;

    // A source changed: a new record, and its text from then on.
    context.set("h2", "SYSTEM TWO");
    let resumed = resume_and_send(&h, &id, "three", 3).await;
    assert_eq!(system(&model.request(2)).as_deref(), Some("SYSTEM TWO"));
    let events = resumed.agent().session().events();
    assert_eq!(count(&events, "context/instructions"), 2);
    validate_log(&events);
    resumed.dispose().await;
}

#[tokio::test]
async fn a_caller_prompt_given_once_outlives_a_resume_without_it() {
    let model = ScriptedModel::new(vec![say("a"), say("b")]);
    let h = Harness::persistent(model.clone()).await;
    let context = provide(&h);
    let handle = h
        .agent_with(AgentOverrides {
            system_prompt: Some("FROM THE EDITOR".into()),
            audience: Some(Audience::Editor),
            ..AgentOverrides::default()
        })
        .await;
    let id = handle.agent().id().clone();
    assert_eq!(
        handle.agent().send(user("one")).unwrap().await,
        completed(1)
    );
    handle.dispose().await;
    let resumed = resume_and_send(&h, &id, "two", 2).await;
    let asked = context.requests.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert_eq!(asked[1].caller, Some("FROM THE EDITOR".into()));
    assert_eq!(
        system(&model.request(1)).as_deref(),
        Some("SYSTEM ONE\nFROM THE EDITOR")
    );
    assert_eq!(
        count(&resumed.agent().session().events(), "context/instructions"),
        1
    );
    resumed.dispose().await;
}

#[tokio::test]
async fn without_a_context_service_the_caller_prompt_alone_is_recorded_and_sent() {
    let model = ScriptedModel::new(vec![say("a")]);
    let h = Harness::new(model.clone()).await;
    let handle = h
        .agent_with(AgentOverrides {
            system_prompt: Some("be brief".into()),
            ..AgentOverrides::default()
        })
        .await;
    let agent = handle.agent().clone();
    assert_eq!(agent.send(user("one")).unwrap().await, completed(1));
    assert_eq!(system(&model.request(0)).as_deref(), Some("be brief"));
    let events = agent.session().events();
    assert_eq!(kinds(&events)[0], "context/instructions");
    assert_eq!(data(&events[0])["text"], "be brief");
    handle.dispose().await;
}

#[tokio::test]
async fn a_context_that_cannot_be_built_fails_the_turn_and_the_next_turn_retries() {
    let model = ScriptedModel::new(vec![say("answered")]);
    let h = Harness::new(model.clone()).await;
    let context = provide(&h);
    *context.fail.lock().unwrap() = true;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let outcome = agent.send(user("first")).unwrap().await;
    assert_eq!(error_code(&outcome).as_deref(), Some("context"));
    assert_eq!(model.calls(), 0, "no request without its system text");
    let events = agent.session().events();
    assert_eq!(count(&events, "context/instructions"), 0);
    assert_eq!(count(&events, "user/message"), 1, "the prompt is on record");
    validate_log(&events);

    *context.fail.lock().unwrap() = false;
    assert_eq!(agent.send(user("again")).unwrap().await, completed(2));
    let request = model.request(0);
    assert_eq!(system(&request).as_deref(), Some("SYSTEM ONE"));
    assert_eq!(last_user_texts(&request, 1), ["first\n\nagain"]);
    handle.dispose().await;
}
