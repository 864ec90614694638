//! The trait the agent loop and the front ends call.

use async_trait::async_trait;
use dsh_kernel::CancellationToken;

use crate::event::HookEvent;
use crate::input::HookInput;
use crate::verdict::HookVerdict;

/// The user's hooks.
#[async_trait]
pub trait Hooks: Send + Sync + 'static {
    /// Whether any handler would run for `event` with these subjects (see
    /// [`HookInput::subjects`]). Synchronous and cheap: called at every tool call.
    fn wants(&self, event: HookEvent, subjects: &[&str]) -> bool;

    /// Runs every matching handler of the input's event, concurrently, and folds their
    /// answers. `cancel` (the turn's) ends the handlers still running; what they answered
    /// by then counts.
    async fn run(&self, input: HookInput, cancel: CancellationToken) -> HookVerdict;
}

/// No hooks: nothing runs, every verdict is empty.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

#[async_trait]
impl Hooks for NoHooks {
    fn wants(&self, _event: HookEvent, _subjects: &[&str]) -> bool {
        false
    }

    async fn run(&self, _input: HookInput, _cancel: CancellationToken) -> HookVerdict {
        HookVerdict::default()
    }
}
