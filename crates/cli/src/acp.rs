//! `dsh acp`: the composition root with the ACP bridge as its front end.
//!
//! Everything that can be refused (settings, model, key, the sessions directory) is checked
//! before the first byte is read, and stdout stays empty in every case but frames. The
//! process exits 0 once the bridge's teardown is done, and never later than its deadline:
//! an editor must not be left with a lingering agent.

use std::os::unix::fs::DirBuilderExt;
use std::time::Duration;

use dsh_acp::{AcpBridge, AcpConfig, PermissionMode, ShutdownReason};
use tokio::signal::unix::{SignalKind, signal};

use crate::args::{AcpPermission, Global};
use crate::exit::Failure;
use crate::settings::Settings;

/// Runs `dsh acp`; returns the exit status.
pub async fn acp(global: &Global, permission: Option<AcpPermission>) -> u8 {
    match serve(global, permission).await {
        Ok(()) => 0,
        Err(failure) => {
            eprintln!("error: {}", failure.message);
            failure.status
        }
    }
}

fn config(settings: &Settings, permission: Option<AcpPermission>, title: String) -> AcpConfig {
    let permission = match permission {
        Some(AcpPermission::Ask) => PermissionMode::Ask,
        Some(AcpPermission::Allow) => PermissionMode::Allow,
        None if settings.acp_permission.value == "allow" => PermissionMode::Allow,
        None => PermissionMode::Ask,
    };
    AcpConfig {
        permission,
        max_line_bytes: usize::try_from(settings.acp_max_line_bytes.value).unwrap_or(usize::MAX),
        cancel_grace: Duration::from_millis(settings.acp_cancel_grace_ms.value),
        teardown_deadline: Duration::from_millis(settings.acp_teardown_deadline_ms.value),
        agent_title: title,
    }
}

async fn serve(global: &Global, permission: Option<AcpPermission>) -> Result<(), Failure> {
    let settings = Settings::resolve(global, None)?;
    let chosen = crate::model::choose(&settings)?;
    let title = match &chosen.replay_name {
        Some(name) => format!("dsh (replay: {name})"),
        None => "dsh".to_owned(),
    };
    let config = config(&settings, permission, title);
    let sessions = settings.sessions_dir();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&sessions)
        .map_err(|e| Failure::internal(format!("cannot create {}: {e}", sessions.display())))?;
    let mut signals = Signals::new()?;
    let runtime = crate::compose::compose(&settings, &sessions, chosen.plugin).await?;
    let deadline = config.teardown_deadline;
    tracing::info!(
        model = %chosen.label,
        permission = ?config.permission,
        "dsh acp serving on stdio"
    );
    let bridge = match AcpBridge::new(runtime.scope(), config) {
        Ok(bridge) => bridge,
        Err(e) => {
            runtime.shutdown().await;
            return Err(Failure::internal(e.to_string()));
        }
    };
    let shutdown = async move { signals.next().await };
    let report = bridge
        .serve(tokio::io::stdin(), tokio::io::stdout(), shutdown)
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

/// SIGTERM, SIGHUP and SIGINT all end the connection the same way.
struct Signals {
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, Failure> {
        let listen = |kind: SignalKind| {
            signal(kind).map_err(|e| Failure::internal(format!("cannot listen for signals: {e}")))
        };
        Ok(Signals {
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
            int: listen(SignalKind::interrupt())?,
        })
    }

    async fn next(&mut self) -> ShutdownReason {
        tokio::select! {
            _ = self.term.recv() => ShutdownReason::Signal("SIGTERM"),
            _ = self.hup.recv() => ShutdownReason::Signal("SIGHUP"),
            _ = self.int.recv() => ShutdownReason::Signal("SIGINT"),
        }
    }
}
