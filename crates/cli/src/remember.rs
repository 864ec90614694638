//! What a stored session remembers of where it ran: the server its requests went to and the
//! model that answered, so `dsh run -c` continues it there instead of at the defaults. The
//! key is never stored; it is read from the environment as always.
//!
//! Read before anything is composed (the model provider depends on it), straight from the
//! session store and without changing it.

use dsh_agent::SessionConfig;
use dsh_agent::record::Record;
use dsh_session::EventVocabulary;

use crate::run::{Target, find};

/// `settings` for a run on `target`: a resumed session goes back to the server and model it
/// ran with, unless this run says otherwise (a scripted model remembers nothing).
pub async fn settings_for(
    settings: crate::settings::Settings,
    global: &crate::args::Global,
    flags: crate::settings::CommandFlags,
    target: &Target,
) -> Result<crate::settings::Settings, crate::exit::Failure> {
    if settings.replay.is_some() {
        return Ok(settings);
    }
    let remembered = match crate::store::Store::of(&settings) {
        Ok(store) => of(&store, target).await,
        Err(_) => Remembered::default(),
    };
    match remembered == Remembered::default() {
        true => Ok(settings),
        false => crate::settings::Settings::resolve_for(global, flags, &remembered),
    }
}

/// The server and model a session last used; each `None` when it did not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remembered {
    pub base_url: Option<String>,
    pub model: Option<String>,
}

/// What the session `target` names remembers; nothing when it names none, or none is found
/// (the run then reports that the usual way).
pub async fn of(store: &crate::store::Store, target: &Target) -> Remembered {
    if matches!(target, Target::New) || store.surely_empty() {
        return Remembered::default();
    }
    let Ok(persistence) = store.open().await else {
        return Remembered::default();
    };
    let remembered = match find(&*persistence, target, store).await {
        Ok(Some(id)) => match persistence.inspect(&id, &EventVocabulary::new()).await {
            Ok(loaded) => remembered(&loaded.events),
            Err(e) => {
                tracing::debug!(session = %id, "its server is not known: {e}");
                Remembered::default()
            }
        },
        Ok(None) | Err(_) => Remembered::default(),
    };
    // A database's provider holds a pool and a renewal task: closed, not left behind.
    let _ = persistence.shutdown().await;
    remembered
}

/// The last recorded server, and the model chosen for the session or else the one that last
/// answered (a scripted replay model is no server's).
fn remembered(events: &[std::sync::Arc<dsh_session::SessionEvent>]) -> Remembered {
    let config = SessionConfig::replay(events.iter().map(|e| &**e));
    let answered = events
        .iter()
        .rev()
        .find_map(|event| match Record::decode(event) {
            Ok(Record::AssistantMessage(answer)) if !answer.model.starts_with("replay:") => {
                Some(answer.model)
            }
            Ok(_) | Err(_) => None,
        });
    Remembered {
        base_url: config.server,
        model: config.model.or(answered),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chosen_model_wins_over_the_one_that_answered_and_a_replay_is_no_server() {
        let events = dsh_test_support::stored::log(&[
            (
                "assistant/message",
                r#"{"turn":1,"step":1,"message":{"content":"hi"},"model":"qwen"}"#,
            ),
            (
                "config/changed",
                r#"{"key":"server","new":"http://127.0.0.1:8080/v1","origin":"flag"}"#,
            ),
        ]);
        assert_eq!(
            remembered(&events),
            Remembered {
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                model: Some("qwen".into()),
            }
        );
        let chosen = dsh_test_support::stored::log(&[
            (
                "assistant/message",
                r#"{"turn":1,"step":1,"message":{"content":"hi"},"model":"qwen"}"#,
            ),
            (
                "config/changed",
                r#"{"key":"model","new":"llama","origin":"acp"}"#,
            ),
        ]);
        assert_eq!(remembered(&chosen).model.as_deref(), Some("llama"));
        let replayed = dsh_test_support::stored::log(&[(
            "assistant/message",
            r#"{"turn":1,"step":1,"message":{"content":"hi"},"model":"replay:demo"}"#,
        )]);
        assert_eq!(remembered(&replayed), Remembered::default());
    }
}
