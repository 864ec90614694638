//! Helpers for tests that watch task futures end.

use tokio::sync::oneshot;

/// Signals when dropped: proves a task's future is gone.
pub struct DropSignal(pub Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}
