//! The task table: every task by id in start order, admission against the limits, retention
//! of finished tasks and eviction of the earliest finished beyond the limit.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use dsh_shell::{ShellError, TaskId};

use crate::config::LocalShellConfig;
use crate::task::Task;

#[derive(Debug, Default)]
pub(crate) struct Table {
    pub tasks: BTreeMap<TaskId, Arc<Task>>,
    /// Retained finished tasks, earliest finished first.
    finished: VecDeque<TaskId>,
    /// Running or terminating tasks, plus admissions whose spawn is under way.
    pub running: usize,
    /// The tail caps of every task in the table plus pending admissions.
    reserved: usize,
    pub disposing: bool,
    /// Spawns so far: the second half of each marker.
    pub seq: u64,
}

impl Table {
    /// Reserves a running slot and `cap` bytes of tail, or says why not.
    pub fn admit(&mut self, config: &LocalShellConfig, cap: usize) -> Result<u64, ShellError> {
        if self.disposing {
            return Err(ShellError::Disposed);
        }
        if self.running >= config.max_running_tasks {
            return Err(ShellError::TooManyTasks {
                limit: config.max_running_tasks,
            });
        }
        if self.reserved.saturating_add(cap) > config.max_total_output {
            return Err(ShellError::OutputBudget {
                limit: config.max_total_output,
            });
        }
        self.running += 1;
        self.reserved += cap;
        self.seq += 1;
        Ok(self.seq)
    }

    /// Gives back what `admit` reserved for a spawn that did not happen.
    pub fn cancel_admission(&mut self, cap: usize) {
        self.running -= 1;
        self.reserved -= cap;
    }

    /// A task stopped running.
    pub fn stopped(&mut self) {
        self.running = self.running.saturating_sub(1);
    }

    /// Removes `id`; the caller drops what is returned outside the lock.
    pub fn remove(&mut self, id: TaskId) -> Option<Arc<Task>> {
        let task = self.tasks.remove(&id)?;
        self.reserved = self.reserved.saturating_sub(task.cap);
        self.finished.retain(|f| *f != id);
        Some(task)
    }

    /// Retains a finished task; returns the ones evicted to make room.
    pub fn retain_finished(&mut self, id: TaskId, limit: usize) -> Vec<Arc<Task>> {
        self.finished.push_back(id);
        let mut evicted = Vec::new();
        while self.finished.len() > limit {
            if let Some(oldest) = self.finished.pop_front()
                && let Some(task) = self.remove(oldest)
            {
                evicted.push(task);
            }
        }
        evicted
    }

    /// Empties the table.
    pub fn clear(&mut self) -> Vec<Arc<Task>> {
        self.finished.clear();
        self.reserved = 0;
        std::mem::take(&mut self.tasks).into_values().collect()
    }
}
