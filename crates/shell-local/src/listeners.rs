//! Completion listeners: called in subscription order, outside every executor lock, each
//! contained so a panic touches nothing else; closed for good when disposal begins.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use dsh_shell::{ShellExecutor, TaskDone, TaskDoneListener, TaskDoneSubscription};

#[derive(Default)]
pub(crate) struct Listeners {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    list: Vec<(u64, Arc<TaskDoneListener>)>,
    closed: bool,
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners").finish_non_exhaustive()
    }
}

impl Listeners {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn subscribe(self: &Arc<Self>, listener: TaskDoneListener) -> TaskDoneSubscription {
        let mut state = self.lock();
        let key = state.next;
        state.next += 1;
        if !state.closed {
            state.list.push((key, Arc::new(listener)));
        }
        drop(state);
        let weak: Weak<Listeners> = Arc::downgrade(self);
        TaskDoneSubscription::new(move || {
            if let Some(listeners) = weak.upgrade() {
                // The listener is dropped after the lock is released: its drop is foreign code.
                let removed = {
                    let mut state = listeners.lock();
                    let at = state.list.iter().position(|(k, _)| *k == key);
                    at.map(|i| state.list.remove(i))
                };
                drop(removed);
            }
        })
    }

    pub fn close(&self) {
        let list = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.list)
        };
        drop(list);
    }

    pub fn deliver(&self, executor: &dyn ShellExecutor, done: &TaskDone) {
        let snapshot: Vec<(u64, Arc<TaskDoneListener>)> = self.lock().list.clone();
        for (key, listener) in snapshot {
            // Re-checked per listener: one dropped or closed meanwhile is not called.
            let live = {
                let state = self.lock();
                !state.closed && state.list.iter().any(|(k, _)| *k == key)
            };
            if !live {
                continue;
            }
            if dsh_kernel::contain::catch(|| listener(executor, done)).is_err() {
                tracing::error!(task = %done.id, "a task-done listener panicked; the task is unaffected");
            }
        }
    }
}
