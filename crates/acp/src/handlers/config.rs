//! The session's pickers: the option set a session starts with (in the answer to
//! `session/new`, `load` and `resume`), `session/set_config_option` and `session/set_mode`.
//!
//! A change goes to the agent, which records it as `config/changed` (so a later load is back
//! where the session was left) and applies the model and reasoning level from its next model
//! call; the permission mode is applied here, by the session's gate. A client that changed
//! an option through one surface is told of it through the other: `current_mode_update`
//! after `set_config_option` of the mode, `config_option_update` after `set_mode`.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption, SessionConfigOptionValue,
    SessionModeState, SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use dsh_agent::{ConfigChange, ConfigOrigin};
use dsh_llm::{CancellationToken, Model};
use serde_json::value::RawValue;

use super::setup::{setup_contained, spawn_setup};
use crate::conn::Conn;
use crate::live_session::LiveSession;
use crate::options::Settings;
use crate::path::Item;
use crate::reply::{Reply, result};
use crate::rpc::{RpcError, code};

/// How long the server's model list is waited for. It is asked for once per process, in the
/// background: no answer waits for it. Until it comes (or when it does not), the picker
/// offers the configured model; when it comes, every session already answered gets the
/// picker again with the list (`config_option_update`).
const MODEL_LIST_WAIT: Duration = Duration::from_secs(3);

/// Asks for the server's model list in the background, once per connection.
pub(crate) fn fetch_models(conn: &Arc<Conn>) {
    if conn.models().initialized() {
        return;
    }
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        let models = fetch(&conn2).await;
        if !models.is_empty() {
            for record in conn2.state().records() {
                catch_up(&conn2, &record);
            }
        }
    });
}

/// The client knows `record`'s session now: it gets the list if it came meanwhile.
pub(crate) fn announced(conn: &Conn, record: &LiveSession) {
    record.pickers.lock().announced = true;
    catch_up(conn, record);
}

/// Sends `record`'s pickers again when the list came after its answer and the client knows
/// the session; at most once.
fn catch_up(conn: &Conn, record: &LiveSession) {
    let models = known_models(conn);
    {
        let mut pickers = record.pickers.lock();
        if !pickers.announced || pickers.with_models || models.is_empty() {
            return;
        }
        pickers.with_models = true;
    }
    let settings = settings_with(conn, record, models);
    let update = ConfigOptionUpdate::new(settings.options());
    record.push(Item::Update(Box::new(SessionUpdate::ConfigOptionUpdate(
        update,
    ))));
}

/// The models the server offers, when the list came; empty until then.
fn known_models(conn: &Conn) -> Vec<String> {
    conn.models().get().cloned().unwrap_or_default()
}

/// The models the server offers: asked for once per connection's process, then cached.
async fn fetch(conn: &Conn) -> Vec<String> {
    conn.models()
        .get_or_init(|| async {
            let Some(model) = conn.scope().get::<dyn Model>() else {
                return Vec::new();
            };
            let cancel = CancellationToken::new();
            match tokio::time::timeout(MODEL_LIST_WAIT, model.models(cancel.clone())).await {
                Ok(Ok(models)) => models,
                Ok(Err(err)) => {
                    tracing::info!("the model picker offers the configured model only: {err}");
                    Vec::new()
                }
                Err(_) => {
                    cancel.cancel();
                    tracing::info!(
                        "the model picker offers the configured model only: the model list did not come in {MODEL_LIST_WAIT:?}"
                    );
                    Vec::new()
                }
            }
        })
        .await
        .clone()
}

/// The settings of `record`'s session now, with the models known so far.
pub(crate) fn settings(conn: &Conn, record: &LiveSession) -> Settings {
    let models = known_models(conn);
    if !models.is_empty() {
        record.pickers.lock().with_models = true;
    }
    settings_with(conn, record, models)
}

fn settings_with(conn: &Conn, record: &LiveSession, models: Vec<String>) -> Settings {
    let recorded = record.agent.config();
    let configured = conn
        .scope()
        .get::<dyn Model>()
        .map(|model| model.info().model.clone())
        .unwrap_or_default();
    Settings {
        models,
        model: recorded.model.unwrap_or(configured),
        thought_level: recorded.thought_level.or(record.agent.options().reasoning),
        mode: *record.mode.lock(),
    }
}

/// The answer to `session/new` (with the new `session_id`), `load` and `resume`: the option
/// set, and the same modes as session modes — made JSON text in one pass, since every
/// session's first answer carries them.
pub(crate) fn session_answer(
    conn: &Arc<Conn>,
    record: &LiveSession,
    session_id: Option<&str>,
) -> Result<Box<RawValue>, RpcError> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<&'a str>,
        config_options: Vec<SessionConfigOption>,
        modes: SessionModeState,
    }
    // A client that skipped `initialize`'s request for the list still gets it later.
    fetch_models(conn);
    let settings = settings(conn, record);
    let answer = Answer {
        session_id,
        config_options: settings.options(),
        modes: settings.modes(),
    };
    serde_json::value::to_raw_value(&answer).map_err(|e| {
        tracing::error!(error = %e, "a session's answer did not serialise");
        RpcError::internal_failure()
    })
}

/// `session/set_config_option`.
pub(crate) fn set_config_option(
    conn: &Arc<Conn>,
    reply: Reply,
    request: SetSessionConfigOptionRequest,
) {
    let sent = request.session_id.0.to_string();
    let Some(record) = conn.state().record(&sent) else {
        return reply.send(Err(RpcError::session_not_found(&sent)));
    };
    let value = match request.value {
        SessionConfigOptionValue::ValueId { value } => value.0.to_string(),
        _ => {
            return reply.send(Err(RpcError::bad_field(
                "value",
                "every option of dsh takes a value id",
            )));
        }
    };
    let config_id = request.config_id.0.to_string();
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        let outcome = setup_contained("session/set_config_option", async {
            let (settings, mode_changed) = change(&conn2, &record, &config_id, &value).await?;
            if mode_changed {
                let update = CurrentModeUpdate::new(settings.mode.as_str());
                record.push(Item::Update(Box::new(SessionUpdate::CurrentModeUpdate(
                    update,
                ))));
            }
            Ok(SetSessionConfigOptionResponse::new(settings.options()))
        })
        .await;
        reply
            .answer(outcome.map(|r| serde_json::to_value(r).unwrap_or_default()))
            .await;
    });
}

/// `session/set_mode`: the mode option under ACP's older name.
pub(crate) fn set_mode(conn: &Arc<Conn>, reply: Reply, request: SetSessionModeRequest) {
    let sent = request.session_id.0.to_string();
    let Some(record) = conn.state().record(&sent) else {
        return reply.send(Err(RpcError::session_not_found(&sent)));
    };
    let mode = request.mode_id.0.to_string();
    if mode.parse::<dsh_tools::PermissionMode>().is_err() {
        return reply.send(Err(RpcError::bad_field(
            "modeId",
            format!("{mode:?} is not a mode: expected one of ask, accept-edits, allow"),
        )));
    }
    let conn2 = conn.clone();
    spawn_setup(conn, async move {
        let outcome = setup_contained("session/set_mode", async {
            let (settings, changed) = change(&conn2, &record, "mode", &mode).await?;
            if changed {
                let update = ConfigOptionUpdate::new(settings.options());
                record.push(Item::Update(Box::new(SessionUpdate::ConfigOptionUpdate(
                    update,
                ))));
            }
            result(&SetSessionModeResponse::new())
        })
        .await;
        reply.answer(outcome).await;
    });
}

/// Applies the client's choice; answers the settings after it and whether the mode changed.
async fn change(
    conn: &Conn,
    record: &LiveSession,
    config_id: &str,
    value: &str,
) -> Result<(Settings, bool), RpcError> {
    let mut settings = settings(conn, record);
    let Some(change) = settings.change(config_id, value)? else {
        return Ok((settings, false));
    };
    record
        .agent
        .configure(change.clone(), ConfigOrigin::Acp)
        .map_err(|e| RpcError::new(code::INTERNAL, format!("the change was not made: {e}")))?;
    let mode_changed = match &change {
        ConfigChange::Mode(mode) => {
            *record.mode.lock() = *mode;
            true
        }
        ConfigChange::Model(_) | ConfigChange::ThoughtLevel(_) | ConfigChange::Server(_) => false,
    };
    tracing::info!(session = %record.id, option = config_id, value, "session option changed");
    settings.apply(&change);
    Ok((settings, mode_changed))
}
