//! `dsh acp`: the composition root with the ACP bridge as its front end.
//!
//! Everything that can be refused (settings, model, key, the sessions directory) is checked
//! before the first byte is read, and stdout stays empty in every case but frames. The
//! process exits 0 once the bridge's teardown is done, and never later than its deadline:
//! an editor must not be left with a lingering agent.

use std::sync::Arc;
use std::time::Duration;

use dsh_acp::{AcpBridge, AcpConfig, ShutdownReason};

use dsh_tools::PermissionMode;

use crate::args::Global;
use crate::exit::Failure;
use crate::settings::{CommandFlags, Settings};
use crate::signals::Signals;

/// Runs `dsh acp`; returns the exit status.
pub async fn acp(
    global: &Global,
    permission: Option<PermissionMode>,
    max_steps: Option<u32>,
) -> u8 {
    match serve(global, permission, max_steps).await {
        Ok(()) => 0,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

fn config(settings: &Settings, title: String) -> AcpConfig {
    AcpConfig {
        permission: settings.acp_permission.value,
        max_line_bytes: settings.acp_max_line_bytes.value,
        cancel_grace: settings.acp_cancel_grace.value,
        teardown_deadline: settings.acp_teardown_deadline.value,
        agent_title: title,
        auth_required: None,
        auth_hint: Some(crate::model::auth_hint(settings)),
        prices: settings.prices.clone(),
        commands_dir: settings.user_commands(),
        server: settings
            .replay
            .is_none()
            .then(|| settings.base_url.value.clone()),
        rules: crate::compose::permission_rules(settings)
            .map(Arc::new)
            .unwrap_or_default(),
        remembered: Some(crate::compose::remembered(settings)),
    }
}

async fn serve(
    global: &Global,
    permission: Option<PermissionMode>,
    max_steps: Option<u32>,
) -> Result<(), Failure> {
    let flags = CommandFlags {
        acp_permission: permission,
        max_steps,
        ..CommandFlags::default()
    };
    let settings = Settings::resolve(global, flags)?;
    // A missing key must not stop the server before `initialize`: the editor would only show
    // that its agent exited. Sessions are refused instead, with what to set and where.
    let (model, title, guidance) = match crate::model::choose(&settings) {
        Ok(chosen) => {
            let title = match &chosen.replay_name {
                Some(name) => format!("dsh (replay: {name})"),
                None => "dsh".to_owned(),
            };
            tracing::info!(model = %chosen.label, "dsh acp serving on stdio");
            (Some(chosen.plugin), title, None)
        }
        Err(failure) if failure.code == crate::model::MISSING_API_KEY => {
            tracing::warn!("no API key: sessions are refused until it is set");
            let guidance = crate::model::missing_key_for_editor(&settings);
            (None, "dsh".to_owned(), Some(guidance))
        }
        Err(failure) => return Err(failure),
    };
    let mut config = config(&settings, title);
    config.auth_required = guidance;
    let store = crate::store::Store::prepared(&settings)?;
    let mut signals = Signals::new()?;
    let runtime = crate::compose::compose(&settings, &store, model).await?;
    // An editor shows an agent's stderr as its log: the one place to say it.
    for notice in crate::compose::start_notices(&runtime, &settings) {
        tracing::warn!("{notice}");
    }
    let deadline = config.teardown_deadline;
    let bridge = match AcpBridge::new(runtime.scope(), config) {
        Ok(bridge) => bridge,
        Err(e) => {
            runtime.shutdown().await;
            return Err(Failure::internal(e.to_string()));
        }
    };
    let shutdown = async move { ShutdownReason::Signal(signals.next().await.name()) };
    let report = bridge
        .serve(tokio::io::stdin(), crate::output::acp_stdout(), shutdown)
        .await;
    // The bridge has stopped every agent; the root scope still holds the shell executor and
    // the session store. Their disposal gets what is left of the deadline, and no more: an
    // editor must never be left waiting on a lingering agent.
    let spent = report.as_ref().map_or(Duration::ZERO, |r| r.teardown);
    let left = deadline.saturating_sub(spent);
    if tokio::time::timeout(left, runtime.shutdown())
        .await
        .is_err()
    {
        tracing::error!("the runtime did not shut down within the teardown deadline");
    }
    if let Err(e) = report {
        tracing::error!(error = %e, "the ACP bridge could not serve");
    }
    Ok(())
}
