//! The executor's containment of processes started elsewhere (an MCP server): they carry a
//! marker of this executor's family, so the executor's disposal sweep and its watchdog end
//! them as they end tasks, and their starter can end them and their escapees itself.

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use dsh_shell::{Enrolment, ProcessContainment};

use crate::escapees::{self, MARKER_VAR, Targets};
use crate::executor::LocalShellExecutor;
use crate::procfs;

/// How long a release keeps ending processes that are still appearing.
const RELEASE_BOUND: Duration = Duration::from_secs(2);

#[async_trait]
impl ProcessContainment for LocalShellExecutor {
    fn enrol(&self, label: &str) -> Enrolment {
        // `x` keeps these apart from task markers, which are `<nonce>.<digits>`; the prefix
        // `<nonce>.` is what disposal and the watchdog sweep.
        let seq = self.inner.enrolled.fetch_add(1, Ordering::Relaxed);
        // What it starts must be covered if dsh is SIGKILLed.
        let _ = self.inner.watchdog();
        let value = format!("{}.x{seq}", self.inner.nonce);
        tracing::debug!(label, marker = %value, "a process started outside the executor is enrolled");
        Enrolment {
            var: MARKER_VAR.to_owned(),
            value,
        }
    }

    fn confine(
        &self,
        policy: &dsh_shell::SandboxPolicy,
        argv: Vec<std::ffi::OsString>,
    ) -> Result<dsh_shell::Confined, String> {
        let sandboxed = self
            .inner
            .sandboxed(policy)
            .map_err(|e| e.to_string())?
            .ok_or("full access asks for no sandbox")?;
        let mut confined = vec![sandboxed.helper.into_os_string()];
        confined.extend(sandboxed.confinement.args());
        confined.extend(argv);
        Ok(dsh_shell::Confined {
            argv: confined,
            env: vec![("TMPDIR".into(), sandboxed.tmp.into_os_string())],
        })
    }

    async fn release(&self, enrolment: &Enrolment, leader: Option<u32>) {
        let entry = Targets::marker_entry(&enrolment.value);
        let spare = leader.and_then(|pid| i32::try_from(pid).ok());
        let ended = tokio::task::spawn_blocking(move || {
            escapees::kill_everywhere(
                &|pid, _| procfs::environ_has(pid, &|e| e == entry.as_slice()),
                spare,
                RELEASE_BOUND,
            )
        })
        .await;
        if let Ok(n) = ended
            && n > 0
        {
            tracing::debug!(marker = %enrolment.value, ended = n, "an enrolled process's tree was ended");
        }
    }
}
