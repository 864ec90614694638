//! dsh-agent's integration suite: tickets, the memoised handle teardown, messages, options,
//! and the durable records.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod records;

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_agent::{
    Agent, AgentError, AgentEvent, AgentHandle, AgentOptions, AgentOverrides, AgentStatus,
    CancelCause, MessageId, MessageSource, TurnEndReason, TurnOutcome, TurnTicket, UserMessage,
};
use dsh_kernel::{Runtime, Teardown};
use dsh_session::{Session, SessionId, SessionSpec, SessionStore};
use futures::future::BoxFuture;

#[tokio::test]
async fn a_ticket_resolves_once_with_what_the_provider_sent() {
    let id = MessageId::mint();
    let (sender, ticket) = TurnTicket::channel(id.clone());
    assert_eq!(ticket.message_id(), &id);
    sender.resolve(TurnOutcome::Ended {
        turn: 3,
        reason: TurnEndReason::Completed,
    });
    assert_eq!(
        ticket.await,
        TurnOutcome::Ended {
            turn: 3,
            reason: TurnEndReason::Completed
        }
    );
}

#[tokio::test]
async fn a_dropped_sender_resolves_its_ticket_failed_internal() {
    let (sender, ticket) = TurnTicket::channel(MessageId::mint());
    drop(sender);
    match ticket.outcome().await {
        TurnOutcome::Failed { failure } => assert_eq!(failure.code, "internal"),
        other => panic!("{other:?}"),
    }
}

/// The least agent that satisfies the trait, for handle tests.
struct Still {
    session: Session,
    options: AgentOptions,
}

impl Agent for Still {
    fn id(&self) -> &SessionId {
        self.session.id()
    }
    fn session(&self) -> &Session {
        &self.session
    }
    fn options(&self) -> &AgentOptions {
        &self.options
    }
    fn status(&self) -> AgentStatus {
        AgentStatus::Idle
    }
    fn send(&self, _: UserMessage) -> Result<dsh_agent::TurnTicket, AgentError> {
        Err(AgentError::Disposed {
            id: self.id().clone(),
        })
    }
    fn steer(&self, m: UserMessage) -> Result<dsh_agent::TurnTicket, AgentError> {
        self.send(m)
    }
    fn inject(&self, m: UserMessage) -> Result<dsh_agent::TurnTicket, AgentError> {
        self.send(m)
    }
    fn compact(&self, _: dsh_agent::MessageId) -> Result<dsh_agent::TurnTicket, AgentError> {
        self.send(UserMessage::user("compact"))
    }
    fn config(&self) -> dsh_agent::SessionConfig {
        dsh_agent::SessionConfig::default()
    }
    fn configure(
        &self,
        _: dsh_agent::ConfigChange,
        _: dsh_agent::ConfigOrigin,
    ) -> Result<dsh_agent::SessionConfig, AgentError> {
        Err(AgentError::Disposed {
            id: self.id().clone(),
        })
    }
    fn cancel(&self, _: CancelCause) -> bool {
        false
    }
    fn when_idle(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn every_clone_and_owner_runs_the_one_teardown() {
    let runtime = Runtime::new();
    let store = SessionStore::new();
    let session = store.prepare(SessionSpec::new("/w")).unwrap();
    let agent: Arc<dyn Agent> = Arc::new(Still {
        session,
        options: AgentOptions::default(),
    });
    let scope = runtime.scope().detached("agent").unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let teardown = Teardown::for_scope(&scope, move |_| async move {
        counter.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let handle = AgentHandle::new(agent, teardown);
    let owner = runtime.scope().child("owner").unwrap();
    owner.own(handle.teardown()).unwrap();
    let clones: Vec<AgentHandle> = (0..3).map(|_| handle.clone()).collect();

    futures::future::join_all(clones.iter().map(AgentHandle::dispose)).await;
    owner.dispose().await;
    handle.dispose().await;

    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(handle.is_disposed());
    assert_eq!(owner.owned_count(), 0);
    runtime.shutdown().await;
}

#[test]
fn messages_serialize_with_their_source() {
    let m = UserMessage {
        id: MessageId::from_string("m-1"),
        text: "hi".into(),
        source: MessageSource::Plugin {
            name: "bash".into(),
        },
        resources: Vec::new(),
    };
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"id": "m-1", "text": "hi", "source": {"kind": "plugin", "name": "bash"}})
    );
    assert_eq!(serde_json::from_value::<UserMessage>(json).unwrap(), m);
    assert_ne!(UserMessage::user("a").id, UserMessage::user("a").id);
}

#[test]
fn options_default_and_refuse_out_of_range_values() {
    let defaults = AgentOptions::default();
    assert_eq!(defaults.max_steps.get(), 50);
    assert!(defaults.validate().is_ok());
    let mut too_many = AgentOptions::default();
    too_many.max_steps = NonZeroU32::new(10_001).unwrap();
    let err = too_many.validate().unwrap_err();
    assert!(err.to_string().contains("options.max_steps"), "{err}");
    for bad in [-0.1, 2.5, f32::NAN] {
        let mut hot = AgentOptions::default();
        hot.temperature = Some(bad);
        assert!(hot.validate().is_err(), "{bad}");
    }
}

#[test]
fn overrides_change_only_the_fields_they_set() {
    let mut defaults = AgentOptions::default();
    defaults.max_steps = NonZeroU32::new(7).unwrap();
    defaults.system_prompt = Some("be brief".into());
    defaults.temperature = Some(0.2);
    let none = AgentOverrides::default();
    assert_eq!(none.apply_to(&defaults), defaults);
    let warmer = AgentOverrides {
        temperature: Some(1.0),
        ..AgentOverrides::default()
    };
    let merged = warmer.apply_to(&defaults);
    assert_eq!(merged.temperature, Some(1.0));
    assert_eq!(
        merged.max_steps.get(),
        7,
        "an unset step limit keeps the default"
    );
    assert_eq!(merged.system_prompt, Some("be brief".into()));
    let all = AgentOverrides {
        system_prompt: Some("x".into()),
        audience: Some(dsh_agent::Audience::Editor),
        max_output_tokens: NonZeroU32::new(9),
        temperature: Some(0.0),
        reasoning: Some(dsh_llm::ReasoningEffort::High),
        max_steps: NonZeroU32::new(2),
        max_tool_calls: NonZeroU32::new(3),
        context_window: std::num::NonZeroU64::new(4096),
        compact_at: Some(0.5),
        keep_tool_output: Some(100),
    };
    let merged = all.apply_to(&defaults);
    assert_eq!(merged.context_window.get(), 4096);
    assert_eq!(merged.max_tool_calls.get(), 3);
    assert_eq!(
        (
            merged.system_prompt.map(|p| p.text),
            merged.audience,
            merged.max_output_tokens.map(NonZeroU32::get),
            merged.temperature,
            merged.reasoning,
            merged.max_steps.get()
        ),
        (
            Some("x".to_owned()),
            dsh_agent::Audience::Editor,
            Some(9),
            Some(0.0),
            Some(dsh_llm::ReasoningEffort::High),
            2
        )
    );
    let too_hot = AgentOverrides {
        temperature: Some(3.0),
        ..AgentOverrides::default()
    };
    assert!(too_hot.validate().is_err());
}

#[test]
fn events_are_named_and_errors_say_what_to_do() {
    let id = SessionId::parse("s").unwrap();
    assert_eq!(
        AgentEvent::Created { id: id.clone() }.name(),
        "agent/created"
    );
    assert_eq!(
        AgentEvent::CancelRequested {
            id: id.clone(),
            cause: CancelCause::User,
            turn: None,
            discarded: 0
        }
        .name(),
        "agent/cancel-requested"
    );
    assert_eq!(
        AgentError::AlreadyStored { id }.to_string(),
        "session \"s\" already has a stored log; resume it instead"
    );
}
