//! Identity, creation, resume and teardown: ownership, the ordered dispose, durability of the
//! closing `turn/end`, and what is left behind (nothing).

use dsh_agent::{AgentError, CancelCause, CreateAgent, ResumeAgent, TurnEndReason, TurnOutcome};
use dsh_agent_loop::{ConfiguredAgent, LoopConfig};
use dsh_llm::FinishReason;

use crate::support::*;

#[tokio::test]
async fn a_second_creation_of_a_live_id_is_refused_and_the_first_keeps_working() {
    let h = Harness::new(ScriptedModel::new(vec![say("ok")])).await;
    let registry = h.registry();
    let first = registry
        .create(CreateAgent::new(h.owner()).with_id(id("x")).with_cwd("/w"))
        .await
        .unwrap();
    let second = registry
        .create(CreateAgent::new(h.owner()).with_id(id("x")).with_cwd("/w"))
        .await;
    assert!(matches!(second, Err(AgentError::AlreadyLive { .. })));
    assert_eq!(registry.list().len(), 1);
    assert_eq!(h.store.list_live().len(), 1);
    assert!(std::sync::Arc::ptr_eq(
        &registry.get(&id("x")).unwrap(),
        first.agent()
    ));
    assert!(matches!(
        first.agent().send(user("a")).unwrap().await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Completed
        }
    ));
    first.dispose().await;
}

#[tokio::test]
async fn invalid_requests_are_refused_before_anything_is_prepared() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let registry = h.registry();
    let relative = registry
        .create(CreateAgent::new(h.owner()).with_cwd("relative/dir"))
        .await;
    assert!(
        matches!(&relative, Err(AgentError::InvalidRequest { field, .. }) if field == "cwd"),
        "{relative:?}"
    );
    let too_many = registry
        .create(
            CreateAgent::new(h.owner())
                .with_cwd("/w")
                .with_options(max_steps(10_001)),
        )
        .await;
    assert!(matches!(too_many, Err(AgentError::InvalidRequest { .. })));
    assert!(registry.list().is_empty());
    assert!(h.store.list_live().is_empty());
    assert_eq!(h.event_names(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_overriding_one_option_keeps_the_loop_s_other_defaults() {
    let mut config = LoopConfig::default();
    config.defaults.max_steps = std::num::NonZeroU32::new(3).unwrap();
    config.defaults.system_prompt = Some("loop default".into());
    let h = Harness::build(ScriptedModel::new(vec![]), config, false).await;
    let handle = h
        .agent_with(dsh_agent::AgentOverrides {
            temperature: Some(1.5),
            ..dsh_agent::AgentOverrides::default()
        })
        .await;
    let options = handle.agent().options().clone();
    assert_eq!(options.temperature, Some(1.5));
    assert_eq!(options.max_steps.get(), 3, "the step limit is not reset");
    assert_eq!(options.system_prompt, Some("loop default".into()));
    handle.dispose().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dispose_mid_stream_writes_the_closing_turn_end_durably_then_leaves_nothing() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Text("partial"),
        Act::Gate(gate.clone()),
        Act::Hang,
    ]]);
    let h = Harness::persistent(model).await;
    let handle = h.agent().await;
    let agent = handle.agent().clone();
    let ticket = agent.send(user("A")).unwrap();
    gate.entered().await;
    gate.release();

    handle.dispose().await;

    assert_eq!(
        ticket.await,
        TurnOutcome::Ended {
            turn: 1,
            reason: TurnEndReason::Aborted {
                cause: CancelCause::Disposed
            }
        }
    );
    assert!(handle.is_disposed());
    assert!(h.registry().list().is_empty());
    assert!(h.store.list_live().is_empty());
    let names = h.event_names();
    let at = |n: &str| names.iter().position(|e| e == n).unwrap();
    assert!(
        at("agent/cancel-requested") < at("agent/disposed"),
        "{names:?}"
    );
    // What is on disk ends with the closing turn/end.
    let dir = h.dir.as_ref().unwrap().path();
    let file = stored_log(dir);
    let text = std::fs::read_to_string(file).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.contains(r#""type":"turn/end""#), "{last}");
    assert!(last.contains(r#""cause":"disposed""#), "{last}");
    assert!(agent.send(user("late")).is_err());
    assert!(!agent.cancel(CancelCause::User));
    agent.when_idle().await;
    h.runtime.shutdown().await;
    assert_eq!(h.runtime.live_scopes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disposing_an_owner_tears_its_agents_down_and_leaves_no_agent_or_session() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![
        Act::Gate(gate.clone()),
        Act::Finish(FinishReason::Stop),
    ]]);
    let h = Harness::new(model).await;
    let owner = h.runtime.scope().child("acp-connection").unwrap();
    let registry = h.registry();
    let busy = registry
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let idle = registry
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let ticket = busy.agent().send(user("A")).unwrap();
    gate.entered().await;
    assert_eq!(registry.list().len(), 2);

    owner.dispose().await;

    assert!(registry.list().is_empty());
    assert!(h.store.list_live().is_empty());
    assert!(busy.is_disposed() && idle.is_disposed());
    assert!(matches!(
        ticket.await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Aborted {
                cause: CancelCause::Disposed
            },
            ..
        }
    ));
    assert_eq!(h.count("agent/disposed"), 2);
    validate_log(&busy.agent().session().events());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clone_owner_and_the_plugin_unload_share_one_teardown() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let owner = h.runtime.scope().child("owner").unwrap();
    let handle = h
        .registry()
        .create(CreateAgent::new(owner.clone()).with_cwd("/w"))
        .await
        .unwrap();
    let clones: Vec<_> = (0..3).map(|_| handle.clone()).collect();
    let all = futures::future::join_all(clones.iter().map(|c| c.dispose()));
    let (_, _, unloaded) = tokio::join!(all, owner.dispose(), h.runtime.unload("agent-loop"));
    unloaded.unwrap();
    assert_eq!(h.count("agent/disposed"), 1);
    let later = handle.dispose();
    futures::pin_mut!(later);
    assert!(futures::poll!(later).is_ready());
    assert!(h.store.list_live().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unloading_the_plugin_tears_every_agent_down_and_refuses_new_ones() {
    let gate = Gate::default();
    let model = ScriptedModel::new(vec![vec![Act::Gate(gate.clone()), Act::Hang]]);
    let h = Harness::new(model).await;
    let registry = h.registry();
    let streaming = h.agent().await;
    let _idle = h.agent().await;
    let ticket = streaming.agent().send(user("A")).unwrap();
    gate.entered().await;

    h.runtime.unload("agent-loop").await.unwrap();

    assert!(registry.list().is_empty());
    assert!(h.store.list_live().is_empty());
    assert!(matches!(
        ticket.await,
        TurnOutcome::Ended {
            reason: TurnEndReason::Aborted {
                cause: CancelCause::Disposed
            },
            ..
        }
    ));
    let late = registry
        .create(CreateAgent::new(h.owner()).with_cwd("/w"))
        .await;
    assert!(matches!(late, Err(AgentError::ShuttingDown)), "{late:?}");
    assert!(
        h.runtime
            .scope()
            .get::<dyn dsh_agent::AgentRegistry>()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_session_resumes_with_its_history_and_continues_its_turn_numbers() {
    let model = ScriptedModel::new(vec![say("one"), say("two"), say("three")]);
    let h = Harness::persistent(model.clone()).await;
    let registry = h.registry();
    let first = registry
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("kept"))
                .with_cwd("/w"),
        )
        .await
        .unwrap();
    first.agent().send(user("a")).unwrap().await;
    first.agent().send(user("b")).unwrap().await;
    first.dispose().await;

    let over = registry
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("kept"))
                .with_cwd("/w"),
        )
        .await;
    assert!(
        matches!(over, Err(AgentError::AlreadyStored { .. })),
        "{over:?}"
    );

    let resumed = registry
        .resume(ResumeAgent::new(h.owner(), id("kept")))
        .await
        .unwrap();
    assert_eq!(resumed.agent().session().header().cwd, "/w");
    assert!(matches!(
        resumed.agent().send(user("c")).unwrap().await,
        TurnOutcome::Ended {
            turn: 3,
            reason: TurnEndReason::Completed
        }
    ));
    let messages = model.request(2).messages;
    assert_eq!(messages.len(), 5, "a, one, b, two, c: {messages:?}");
    let live = registry
        .resume(ResumeAgent::new(h.owner(), id("kept")))
        .await;
    assert!(matches!(live, Err(AgentError::AlreadyLive { .. })));
    let unknown = registry
        .resume(ResumeAgent::new(h.owner(), id("never")))
        .await;
    assert!(
        matches!(unknown, Err(AgentError::NotFound { .. })),
        "{unknown:?}"
    );
    resumed.dispose().await;
    validate_log(&resumed.agent().session().events());
}

#[tokio::test]
async fn resume_without_persistence_is_refused() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    let resumed = h
        .registry()
        .resume(ResumeAgent::new(h.owner(), id("x")))
        .await;
    assert!(matches!(resumed, Err(AgentError::PersistenceUnavailable)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_agents_belong_to_the_plugin_and_need_no_handle() {
    let model = ScriptedModel::new(vec![say("hi")]);
    let h = Harness::new(model).await;
    h.runtime.unload("agent-loop").await.unwrap();
    let config = LoopConfig {
        agents: vec![
            ConfiguredAgent {
                session_id: Some(id("configured")),
                cwd: Some("/w".into()),
                options: dsh_agent::AgentOverrides::default(),
            },
            ConfiguredAgent::default(),
        ],
        ..LoopConfig::default()
    };
    h.load_loop(config).await;
    let registry = h.registry();
    assert_eq!(registry.list().len(), 2);
    let agent = registry.get(&id("configured")).unwrap();
    assert!(matches!(
        agent.send(user("a")).unwrap().await,
        TurnOutcome::Ended { turn: 1, .. }
    ));
    drop(agent);
    h.runtime.unload("agent-loop").await.unwrap();
    assert!(h.store.list_live().is_empty());
    assert_eq!(h.count("agent/disposed"), 2);
}

#[tokio::test]
async fn duplicate_configured_ids_fail_the_apply_naming_the_id() {
    let h = Harness::new(ScriptedModel::new(vec![])).await;
    h.runtime.unload("agent-loop").await.unwrap();
    let twice = ConfiguredAgent {
        session_id: Some(id("dup")),
        ..ConfiguredAgent::default()
    };
    let config = LoopConfig {
        agents: vec![twice.clone(), twice],
        ..LoopConfig::default()
    };
    let err = h
        .runtime
        .load(dsh_agent_loop::AgentLoopPlugin::new(config))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("dup"), "{err}");
    assert!(
        h.runtime
            .scope()
            .get::<dyn dsh_agent::AgentRegistry>()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_agent_s_stored_header_names_its_parent_and_the_call() {
    let model = ScriptedModel::new(vec![say("one")]);
    let h = Harness::persistent(model.clone()).await;
    let registry = h.registry();
    let child = registry
        .create(
            CreateAgent::new(h.owner())
                .with_id(id("child"))
                .with_cwd("/w")
                .with_parent(id("parent"), "call_3"),
        )
        .await
        .unwrap();
    child.agent().send(user("a")).unwrap().await;
    child.dispose().await;
    let resumed = registry
        .resume(ResumeAgent::new(h.owner(), id("child")))
        .await
        .unwrap();
    let header = resumed.agent().session().header().clone();
    assert_eq!(header.parent, Some(id("parent")));
    assert_eq!(header.parent_call.as_deref(), Some("call_3"));
    resumed.dispose().await;
}
