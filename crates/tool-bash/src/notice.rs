//! Completion notices: a finished background task is announced to its owning live agent, and
//! to no other, as context for its next step or turn (an idle agent is not woken).

use dsh_agent::{AgentError, AgentRegistry, UserMessage};
use dsh_kernel::WeakScope;
use dsh_session::SessionId;
use dsh_shell::{EndCause, KillCause, ShellExecutor, TaskDone, TaskDoneListener};

use crate::render;

/// The notice text.
pub fn text(done: &TaskDone) -> String {
    let first = done.command.lines().next().unwrap_or("");
    let mut excerpt: String = first.chars().take(60).collect();
    if first.chars().count() > 60 {
        excerpt.push('…');
    }
    format!(
        "background task {id} ({excerpt}) finished: {phrase}. Read its output with bash_output task_id=\"{id}\".",
        id = done.id,
        phrase = render::exit_phrase(&done.exit),
    )
}

/// The listener: reads the owner at once, then looks up and injects on a task of the plugin
/// scope, so the executor is never blocked. It holds the scope weakly: the executor's
/// registry must not keep the plugin alive.
pub fn listener(scope: WeakScope) -> TaskDoneListener {
    Box::new(move |executor: &dyn ShellExecutor, done: &TaskDone| {
        // The owner asked for the end (or is being disposed), or the executor is going away.
        if matches!(
            done.exit.end,
            EndCause::Killed(KillCause::Requested | KillCause::Disposed)
        ) {
            return;
        }
        let Some(owner) = executor.owner_of(done.id) else {
            return;
        };
        let Some(scope) = scope.upgrade() else {
            return;
        };
        let message = text(done);
        let id = done.id;
        let lookup = scope.clone();
        let spawned = scope.spawn(async move {
            let Ok(agent_id) = SessionId::parse(&owner) else {
                return;
            };
            let Some(agent) = lookup
                .get::<dyn AgentRegistry>()
                .and_then(|r| r.get(&agent_id))
            else {
                tracing::debug!(task = %id, "the task's owner is not a live agent; notice dropped");
                return;
            };
            match agent.inject(UserMessage::plugin("tool-bash", message)) {
                Ok(ticket) => drop(ticket),
                Err(AgentError::Disposed { .. }) => {}
                Err(error) => {
                    tracing::warn!(task = %id, %error, "the completion notice was refused")
                }
            }
        });
        if spawned.is_err() {
            tracing::debug!(task = %id, "tool-bash is unloading; notice dropped");
        }
    })
}
