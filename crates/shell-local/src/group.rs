//! Terminating one task's process group: SIGTERM and SIGCONT, SIGKILL after the grace if
//! members remain, liveness probes, and never a signal once the group was seen gone (its id
//! may be reused).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::procfs;
use crate::signal::{self, Signaller};

/// After SIGKILL a group gets this long to vanish before it is no longer tracked.
pub(crate) const KILL_BOUND: Duration = Duration::from_secs(5);

/// How often a terminating group is probed.
pub(crate) const PROBE_EVERY: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub(crate) struct Group {
    pgid: i32,
    signaller: Arc<dyn Signaller>,
    grace: Duration,
    term_sent: Option<Instant>,
    kill_sent: Option<Instant>,
    gone: bool,
}

impl Group {
    pub fn new(pgid: i32, signaller: Arc<dyn Signaller>, grace: Duration) -> Group {
        Group {
            pgid,
            signaller,
            grace,
            term_sent: None,
            kill_sent: None,
            gone: false,
        }
    }

    pub fn terminating(&self) -> bool {
        self.term_sent.is_some() || self.kill_sent.is_some()
    }

    pub fn gone(&self) -> bool {
        self.gone
    }

    fn send(&mut self, number: i32) {
        if self.gone {
            return;
        }
        let result = self.signaller.signal_group(self.pgid, Some(number));
        if signal::probe_says_gone(&result) {
            self.gone = true;
        } else if let Err(error) = result {
            tracing::debug!(pgid = self.pgid, number, %error, "group signal failed");
        }
    }

    /// Starts termination; idempotent. `force` skips the grace.
    pub fn begin(&mut self, force: bool) {
        if self.term_sent.is_none() {
            self.term_sent = Some(Instant::now());
            self.send(signal::TERM);
            // Stopped members can only act on the SIGTERM once continued.
            self.send(signal::CONT);
        }
        if force {
            self.kill();
        }
    }

    /// When the armed SIGKILL is due, if one is.
    pub fn kill_at(&self) -> Option<Instant> {
        match (self.term_sent, self.kill_sent, self.gone) {
            (Some(term), None, false) => Some(term + self.grace),
            _ => None,
        }
    }

    /// SIGKILL, sent only if the group still has live members.
    pub fn kill(&mut self) {
        if self.kill_sent.is_some() || self.probe() {
            return;
        }
        self.kill_sent = Some(Instant::now());
        self.send(signal::KILL);
    }

    /// Whether SIGKILL went out longer than the bound ago.
    pub fn kill_overdue(&self) -> bool {
        self.kill_sent.is_some_and(|at| at.elapsed() > KILL_BOUND)
    }

    /// True once the group is gone: no member, or only zombies.
    pub fn probe(&mut self) -> bool {
        if self.gone {
            return true;
        }
        let result = self.signaller.signal_group(self.pgid, None);
        if signal::probe_says_gone(&result) || !procfs::group_has_live_member(self.pgid) {
            self.gone = true;
        }
        self.gone
    }

    /// SIGKILL now, synchronously, for drop paths that cannot await.
    pub fn kill_sync(pgid: i32, signaller: &dyn Signaller) {
        let _ = signaller.signal_group(pgid, Some(signal::KILL));
    }
}
