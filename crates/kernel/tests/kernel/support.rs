//! Shared helpers: an ordered event log, and log capture from dsh-test-support.

use std::sync::{Arc, Mutex};

/// Records what happened, in order, across threads.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

/// A disposer that records `name` when it runs.
pub fn disposer(log: &Log, name: &str) -> impl FnOnce() -> std::future::Ready<()> + Send + use<> {
    let log = log.clone();
    let name = name.to_owned();
    move || {
        log.push(name);
        std::future::ready(())
    }
}

pub use dsh_test_support::logs::capture as capture_logs;
