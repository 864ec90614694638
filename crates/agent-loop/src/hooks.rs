//! The user's hooks at the loop's tool seam, when a `Hooks` service is on the loop's scope:
//! `PreToolUse` before a call is asked about or run (a block or a deny refuses it, an `ask`
//! asks in every mode, an `allow` skips the question as an allow rule would, a rewritten
//! input replaces the arguments), `PostToolUse` after its body (its block reason and its
//! context reach the model with the result).
//!
//! At the turn's seams: `UserPromptSubmit` before a person's prompt is recorded (its context
//! follows the prompt as a notice the model reads), `Stop` (`SubagentStop` in a child agent)
//! when the turn would end (a block keeps it going with the reason as a message, at most
//! [`MAX_STOP_BLOCKS`] times in a row), and `Notification` when something waits for the
//! person: a permission question (run alongside it) or a turn that ended (`idle_prompt`).
//!
//! A session with no hook for the event pays one synchronous lookup.
//!
//! Which hooks run is asked of the scope's `HookSource` by the session's directory at its
//! start and again at each turn ([`refresh`]): a project file trusted meanwhile runs from the
//! next turn (its `SessionStart` handlers first, once), and one changed since it was trusted
//! stops running.

use std::sync::Arc;

use dsh_agent::UserMessage;
use dsh_agent::record::HookRanRecord;
use dsh_hooks::{
    Common, EventFields, HookEvent, HookInput, HookSource, HookVerdict, Hooks, PermissionDecision,
    PermissionModeName, ProjectFile, claude_tool_name,
};
use dsh_kernel::CancellationToken;
use dsh_session::{EventType, Session};
use dsh_tools::{PermissionMode, ToolOutput, Verdict as RuleSays};
use serde_json::Value;

use crate::agent::LoopAgent;

/// How many times in a row `Stop` hooks may keep a turn going: a hook that always blocks
/// must not keep the agent working for ever.
pub(crate) const MAX_STOP_BLOCKS: u32 = 3;

/// The `Notification` type of a turn that ended and waits for the person.
pub(crate) const IDLE: &str = "idle_prompt";

/// The `Notification` type of a permission question waiting for an answer.
pub(crate) const PERMISSION: &str = "permission_prompt";

/// The sender of what hooks tell the model.
const SENDER: &str = "hooks";

/// What `PreToolUse` left of a call.
pub(crate) enum PreTool {
    /// It goes on, with these arguments and this permission verdict.
    Run { args: Value, said: Option<RuleSays> },
    /// A hook refused it, for this reason.
    Refused(String),
}

/// Reads the session's hooks again (at its start, `start` saying how it came to start, and
/// at each turn): the `SessionStart` notice of the project files trusted since the session
/// started, when their hooks add anything. Without a `HookSource` on the scope, nothing.
pub(crate) async fn refresh(
    agent: &LoopAgent,
    start: Option<&'static str>,
    cancel: &CancellationToken,
) -> Option<UserMessage> {
    let source = agent.shared.plugin.get::<dyn HookSource>()?;
    let cwd = agent.roots().cwd().to_path_buf();
    let set = source.hooks(&cwd);
    let (fresh, how) = {
        let mut hooks = agent.hooks.lock();
        hooks.current = Some(set.hooks);
        if let Some(start) = start {
            hooks.source = Some(start);
            hooks.started = set.trusted;
            (Vec::new(), start)
        } else {
            let fresh: Vec<ProjectFile> = set
                .trusted
                .into_iter()
                .filter(|file| !hooks.started.contains(file))
                .collect();
            hooks.started.extend(fresh.iter().cloned());
            (fresh, hooks.source.unwrap_or("startup"))
        }
    };
    let seam = match start {
        Some(_) => Seam::of(agent)?,
        None if fresh.is_empty() => return None,
        None => Seam::with(agent, source.of_files(&cwd, &fresh)),
    };
    seam.session_started(how, cancel).await
}

/// The hooks service and what its inputs share, when the session has hooks.
pub(crate) struct Seam {
    hooks: Arc<dyn Hooks>,
    common: Common,
    /// Where each run is recorded (`hook/ran`), and the turn it ran in.
    session: Session,
    kind: EventType,
    turn: Option<u32>,
    /// The agent is a subagent: its stop is `SubagentStop`.
    subagent: bool,
}

impl Seam {
    /// The seam of `agent`'s session, `None` without a hooks service.
    pub(crate) fn of(agent: &LoopAgent) -> Option<Seam> {
        let hooks = agent.hooks.lock().current.clone()?;
        Some(Seam::with(agent, hooks))
    }

    /// The seam of `agent`'s session running `hooks`.
    fn with(agent: &LoopAgent, hooks: Arc<dyn Hooks>) -> Seam {
        let mode = agent
            .setup
            .approval
            .as_ref()
            .map_or(PermissionMode::Allow, |gate| gate.mode());
        let permission_mode = match mode {
            PermissionMode::Ask => PermissionModeName::Default,
            PermissionMode::AcceptEdits => PermissionModeName::AcceptEdits,
            PermissionMode::Allow => PermissionModeName::BypassPermissions,
        };
        let turn = agent.state.lock().turn.as_ref().map(|t| t.number);
        Seam {
            hooks,
            session: agent.session.clone(),
            kind: agent.shared.kinds.hook_ran.clone(),
            turn,
            subagent: agent.session.header().parent_call.is_some(),
            common: Common {
                session_id: agent.id.to_string(),
                transcript_path: agent.transcript.get().cloned(),
                cwd: agent.roots().cwd().to_path_buf(),
                permission_mode,
            },
        }
    }

    /// `SessionStart` (`startup`, `resume` or `compact`): the notice of what its hooks add
    /// for the model, when they add anything. A subagent's start runs none.
    pub(crate) async fn session_started(
        &self,
        source: &str,
        cancel: &CancellationToken,
    ) -> Option<UserMessage> {
        if self.subagent || !self.hooks.wants(HookEvent::SessionStart, &[source]) {
            return None;
        }
        let verdict = self
            .ask(
                EventFields::SessionStart {
                    source: source.to_owned(),
                },
                cancel,
            )
            .await;
        (!verdict.context.is_empty())
            .then(|| UserMessage::plugin(SENDER, verdict.context.join("\n\n")))
    }

    /// `PreCompact` (`manual`, or `auto` for a compaction the window needed): what its hooks
    /// ask the summary to keep. Nothing blocks a compaction.
    pub(crate) async fn compacting(
        &self,
        trigger: &str,
        cancel: &CancellationToken,
    ) -> Vec<String> {
        if !self.hooks.wants(HookEvent::PreCompact, &[trigger]) {
            return Vec::new();
        }
        let fields = EventFields::PreCompact {
            trigger: trigger.to_owned(),
            custom_instructions: String::new(),
        };
        self.ask(fields, cancel).await.context
    }

    /// `UserPromptSubmit` of a person's `prompt`: the notice of what its hooks add for the
    /// model, when they add anything.
    pub(crate) async fn prompt_submitted(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Option<UserMessage> {
        if !self.hooks.wants(HookEvent::UserPromptSubmit, &[]) {
            return None;
        }
        let verdict = self
            .ask(
                EventFields::UserPromptSubmit {
                    prompt: prompt.to_owned(),
                },
                cancel,
            )
            .await;
        let mut said = verdict.context;
        // A prompt is not taken back once sent: a block is said to the model instead.
        said.extend(
            verdict
                .block
                .map(|reason| format!("a hook of the user's objects: {reason}")),
        );
        (!said.is_empty()).then(|| UserMessage::plugin(SENDER, said.join("\n\n")))
    }

    /// `Stop` (or `SubagentStop`) as the turn would end; `active` when a stop hook already
    /// kept this turn going. The message that keeps it going, when a hook blocks.
    pub(crate) async fn stopping(
        &self,
        active: bool,
        cancel: &CancellationToken,
    ) -> Option<UserMessage> {
        let (event, fields) = match self.subagent {
            true => (
                HookEvent::SubagentStop,
                EventFields::SubagentStop {
                    stop_hook_active: active,
                },
            ),
            false => (
                HookEvent::Stop,
                EventFields::Stop {
                    stop_hook_active: active,
                },
            ),
        };
        if !self.hooks.wants(event, &[]) {
            return None;
        }
        let verdict = self.ask(fields, cancel).await;
        verdict
            .block
            .map(|reason| UserMessage::plugin(SENDER, reason))
    }

    /// `Notification` of a wait for the person (`permission_prompt`, `idle_prompt`); what
    /// its hooks answer changes nothing. A subagent's turn ending is no wait for the person.
    pub(crate) async fn notify(&self, kind: &str, message: String, cancel: &CancellationToken) {
        if (self.subagent && kind == IDLE) || !self.hooks.wants(HookEvent::Notification, &[kind]) {
            return;
        }
        let fields = EventFields::Notification {
            message,
            kind: kind.to_owned(),
        };
        self.ask(fields, cancel).await;
    }

    /// Runs the hooks of the event `fields` describe; what they said for the person is
    /// logged.
    async fn ask(&self, fields: EventFields, cancel: &CancellationToken) -> HookVerdict {
        let input = HookInput {
            common: self.common.clone(),
            fields,
        };
        let event = input.event();
        let verdict = self.hooks.run(input, cancel.clone()).await;
        for message in &verdict.messages {
            tracing::warn!("{message}");
        }
        for run in &verdict.runs {
            let record = HookRanRecord {
                turn: self.turn,
                event: event.as_str().to_owned(),
                command: run.command.clone(),
                exit_code: run.exit_code,
                elapsed_ms: run.elapsed_ms,
                decision: run.decision.clone(),
                error: run.error.clone(),
            };
            if let Err(err) = self.session.append(&self.kind, &record) {
                tracing::debug!("hook/ran not recorded: {err}");
            }
        }
        verdict
    }

    fn wants(&self, event: HookEvent, tool: &str) -> bool {
        let claude = claude_tool_name(tool);
        self.hooks.wants(event, &[claude.as_str(), tool])
    }

    /// `PreToolUse` of a call of `tool`.
    pub(crate) async fn pre_tool_use(
        &self,
        tool: &str,
        call_id: &str,
        args: Value,
        said: Option<RuleSays>,
        cancel: &CancellationToken,
    ) -> PreTool {
        if !self.wants(HookEvent::PreToolUse, tool) {
            return PreTool::Run { args, said };
        }
        let verdict = self
            .ask(
                EventFields::PreToolUse {
                    tool: tool.to_owned(),
                    arguments: args.clone(),
                    call_id: call_id.to_owned(),
                },
                cancel,
            )
            .await;
        if let Some(reason) = verdict.block {
            return PreTool::Refused(reason);
        }
        let said = match verdict.permission {
            Some((PermissionDecision::Deny, why)) => {
                return PreTool::Refused(why.unwrap_or_else(|| "a hook denied it".into()));
            }
            // A rule's ask or the hook's: asked in every mode.
            Some((PermissionDecision::Ask, _)) => Some(RuleSays::Ask),
            // The configuration's own ask still asks.
            Some((PermissionDecision::Allow, _)) => said.or(Some(RuleSays::Allow)),
            None => said,
        };
        PreTool::Run {
            args: verdict.updated_input.unwrap_or(args),
            said,
        }
    }

    /// `PostToolUse` of a call that returned `output`: what its hooks have the model read
    /// besides, appended to the result.
    pub(crate) async fn post_tool_use(
        &self,
        tool: &str,
        call_id: &str,
        args: &Value,
        output: &mut ToolOutput,
        cancel: &CancellationToken,
    ) {
        if !self.wants(HookEvent::PostToolUse, tool) {
            return;
        }
        let response = serde_json::json!({
            "output": output.content,
            "is_error": output.is_error,
            "meta": output.meta,
        });
        let verdict = self
            .ask(
                EventFields::PostToolUse {
                    tool: tool.to_owned(),
                    arguments: args.clone(),
                    call_id: call_id.to_owned(),
                    response,
                },
                cancel,
            )
            .await;
        if let Some(reason) = verdict.block {
            output
                .content
                .push_str(&format!("\n\n[a hook after this call: {reason}]"));
        }
        for context in verdict.context {
            output
                .content
                .push_str(&format!("\n\n[hook context: {context}]"));
        }
    }
}
