//! The `task` tool: starts a child agent for a delegated piece of work, waits for its turn
//! to end, and hands its last answer back.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use dsh_agent::record::{AGENT_SUBAGENT, SubagentPhase, SubagentRecord};
use dsh_agent::{
    AgentOverrides, AgentRegistry, CallerPrompt, CancelCause, ConfigChange, ConfigOrigin,
    CreateAgent, UserMessage,
};
use dsh_kernel::WeakScope;
use dsh_session::{EventType, Session, SessionId, ToolCallRecord};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{
    Effect, HidingToolRegistry, Roots, Tool, ToolCallView, ToolContext, ToolError, ToolKindHint,
    ToolOutput, ToolSchema,
};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::definitions::{self, Definition};
use crate::gate::ChildGate;
use crate::result::{capped, ending, last_answer, usage_line};

/// The tool's name.
const NAME: &str = "task";

/// How children are started.
#[derive(Clone, Debug)]
pub struct TaskConfig {
    /// How deep children nest: 1 lets the caller's agent start children, which start none.
    pub max_depth: u32,
    /// How many children of one caller run at once; further calls wait.
    pub max_running: usize,
    /// A child's step limit (none: the loop's default), never more than its caller's turn
    /// has left.
    pub max_steps: Option<NonZeroU32>,
    /// The user's agent definitions (`~/.config/dsh/agents`).
    pub agents_dir: Option<PathBuf>,
    /// The directory whose project definitions the tool's description lists (a session's
    /// own project is read again at each call).
    pub listed_from: Option<PathBuf>,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            max_depth: 1,
            max_running: 4,
            max_steps: None,
            agents_dir: None,
            listed_from: None,
        }
    }
}

/// The tool.
pub struct TaskTool {
    scope: WeakScope,
    config: TaskConfig,
    /// The definitions the description lists, found when the tool was made.
    listed: Vec<Definition>,
    /// Each caller's running children, counted: a caller's entry lives while a call holds it.
    running: Mutex<HashMap<SessionId, Weak<Semaphore>>>,
}

impl TaskTool {
    /// The tool of the plugin scope `scope`, where the agent registry is found.
    pub fn new(scope: WeakScope, config: TaskConfig) -> TaskTool {
        let listed = match &config.listed_from {
            Some(dir) => {
                let (found, warnings) = definitions::discover(dir, config.agents_dir.as_deref());
                for warning in warnings {
                    tracing::warn!("{warning}");
                }
                found
            }
            None => Vec::new(),
        };
        TaskTool {
            scope,
            config,
            listed,
            running: Mutex::default(),
        }
    }

    /// The count of `caller`'s running children.
    fn slots(&self, caller: &SessionId) -> Arc<Semaphore> {
        let mut running = self.running.lock();
        running.retain(|_, slots| slots.strong_count() > 0);
        if let Some(slots) = running.get(caller).and_then(Weak::upgrade) {
            return slots;
        }
        let slots = Arc::new(Semaphore::new(self.config.max_running.max(1)));
        running.insert(caller.clone(), Arc::downgrade(&slots));
        slots
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    description: String,
    prompt: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    model: Option<String>,
}

/// What every child is told before its task: it works alone and answers once.
const DELEGATED: &str = include_str!("../prompts/delegated.md");

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new("invalid_arguments", message)
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::new("task_refused", message)
}

/// Appends `agent/subagent` to the caller's log; a log that refuses it costs the record,
/// never the call.
fn record(session: &Session, cx: &ToolContext, child: &SessionId, phase: SubagentPhase) {
    let (turn, step) = cx.position().unwrap_or_default();
    let record = SubagentRecord {
        turn,
        step,
        call_id: cx.call_id().to_owned(),
        child: child.clone(),
        phase,
    };
    let appended = EventType::new(AGENT_SUBAGENT)
        .map_err(|e| e.to_string())
        .and_then(|kind| session.append(&kind, &record).map_err(|e| e.to_string()));
    if let Err(e) = appended {
        tracing::debug!(%child, "agent/subagent not recorded: {e}");
    }
}

/// The head of an answer, for the record: its first 200 characters.
fn summary(answer: &str) -> String {
    match answer.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &answer[..at]),
        None => answer.to_owned(),
    }
}

/// How many ancestors the agent `id` has among the live agents.
fn depth(registry: &dyn AgentRegistry, id: &SessionId) -> u32 {
    let mut depth = 0;
    let mut at = id.clone();
    // Bounded: a header cannot name itself, but a damaged chain must not loop.
    while depth < 64 {
        let Some(agent) = registry.get(&at) else {
            break;
        };
        let header = agent.session().header();
        match (&header.parent, &header.parent_call) {
            (Some(parent), Some(_)) => {
                depth += 1;
                at = parent.clone();
            }
            (Some(_), None) | (None, _) => break,
        }
    }
    depth
}

impl Tool for TaskTool {
    fn schema(&self) -> ToolSchema {
        let mut description = "Hand a self-contained piece of work to a subagent: a fresh agent \
                               with your tools and directories but none of this conversation, \
                               which works on `prompt` alone and answers once. Its answer is \
                               this call's result. Several calls in one message run at once."
            .to_owned();
        if !self.listed.is_empty() {
            description.push_str("\n\nNamed agents (pass one as `agent`):");
            for definition in &self.listed {
                description.push_str(&format!(
                    "\n- {}: {}",
                    definition.name,
                    SafeText::plain(&definition.description)
                ));
            }
        }
        ToolSchema {
            name: NAME.to_owned(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {
                        "type": "string",
                        "description": "What the subagent does, in a few words (the card's title)."
                    },
                    "prompt": {
                        "type": "string",
                        "description": "The whole task: what to do, where, what to report back. \
                                        The subagent sees nothing else."
                    },
                    "agent": {
                        "type": "string",
                        "description": "A named agent to run it (optional)."
                    },
                    "model": {
                        "type": "string",
                        "description": "Another model for the subagent (optional; by default \
                                        yours)."
                    }
                },
                "required": ["description", "prompt"],
                "additionalProperties": false
            }),
        }
    }

    fn name(&self) -> String {
        NAME.into()
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    /// A cancelled call waits for its child's turn to end: the child's own bodies get
    /// `grace` each, and a nested child's the same again, so one `grace` per level below,
    /// and a second for the child's stream and teardown.
    fn cancel_grace(&self, grace: std::time::Duration) -> std::time::Duration {
        grace.saturating_mul(self.config.max_depth.saturating_add(2))
    }

    /// The child's own calls are asked about through the same gate; starting it is not.
    fn effect(&self, _args: &Value, _roots: &Roots) -> Effect {
        Effect::Read
    }

    fn call(
        &self,
        args: Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let parsed = serde_json::from_value::<Args>(args).map_err(|e| {
            invalid(format!(
                "the arguments are not a task ({e}): send {{\"description\": \"…\", \"prompt\": \"…\"}}"
            ))
        });
        let scope = self.scope.upgrade().filter(|s| s.is_active());
        let config = self.config.clone();
        let slots = cx.caller_id().map(|caller| self.slots(caller));
        let listed_from = self.config.listed_from.clone();
        Box::pin(async move {
            let args = parsed?;
            if args.prompt.trim().is_empty() || args.description.trim().is_empty() {
                return Err(invalid(
                    "the description or the prompt is empty: say what the subagent is to do",
                ));
            }
            let (Some(caller), Some(caller_scope), Some(slots)) =
                (cx.caller_id().cloned(), cx.caller_scope(), slots)
            else {
                return Err(refused("a task can only be started by an agent"));
            };
            let registry = scope
                .and_then(|s| s.get::<dyn AgentRegistry>())
                .ok_or_else(|| refused("no agent service is running to start a subagent"))?;
            // The child's steps count against the caller's turn: never more than it has
            // left, and none at all when no step is left to read the answer.
            let max_steps = match cx.steps_left() {
                Some(0) => {
                    return Err(refused(
                        "this turn has no step left to read a subagent's answer: finish \
                         without it",
                    ));
                }
                Some(left) => {
                    let left = NonZeroU32::new(left).unwrap_or(NonZeroU32::MIN);
                    Some(config.max_steps.map_or(left, |own| own.min(left)))
                }
                None => config.max_steps,
            };
            // The named agent, from the caller's project or the user's definitions.
            let definition = match &args.agent {
                None => None,
                Some(name) => {
                    let from = cx.session_cwd().map(PathBuf::from).or(listed_from);
                    let (found, _) = match &from {
                        Some(dir) => definitions::discover(dir, config.agents_dir.as_deref()),
                        None => (Vec::new(), Vec::new()),
                    };
                    match found.iter().find(|d| d.name == *name) {
                        Some(definition) => Some(definition.clone()),
                        None => {
                            let known: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
                            return Err(invalid(match known.is_empty() {
                                true => format!(
                                    "there is no agent named `{}`: none is defined \
                                     (.dsh/agents/ or ~/.config/dsh/agents/); leave `agent` out",
                                    SafeText::plain(name)
                                ),
                                false => format!(
                                    "there is no agent named `{}`; the agents are: {}",
                                    SafeText::plain(name),
                                    known.join(", ")
                                ),
                            }));
                        }
                    }
                }
            };
            let depth = depth(registry.as_ref(), &caller);
            if depth >= config.max_depth {
                return Err(refused(format!(
                    "a subagent cannot start subagents here (the depth limit is {}): do the work \
                     yourself",
                    config.max_depth
                )));
            }
            // A place among the caller's running children; a cancel ends the wait.
            let _slot = tokio::select! {
                biased;
                () = cx.cancellation().cancelled() => {
                    return Err(ToolError::new("cancelled", "cancelled before the subagent started"));
                }
                slot = slots.acquire_owned() => slot.map_err(|_| refused("the task tool is shutting down"))?,
            };
            let owner = caller_scope
                .child(&format!("task-{}", cx.call_id()))
                .map_err(|e| refused(format!("the caller is shutting down: {e}")))?;
            let mut prompt = DELEGATED.trim_end().to_owned();
            if let Some(definition) = &definition {
                prompt.push_str(&format!(
                    "\n\n# You are the `{}` agent\n\n{}",
                    definition.name, definition.prompt
                ));
            }
            let mut request = CreateAgent::new(owner.clone())
                .with_parent(caller.clone(), cx.call_id())
                .with_options(AgentOverrides {
                    max_steps,
                    system_prompt: Some(CallerPrompt::append(prompt)),
                    ..AgentOverrides::default()
                });
            if let Some(cwd) = cx.session_cwd() {
                request = request.with_cwd(cwd);
            }
            if let Some(roots) = cx.roots() {
                request =
                    request.with_additional_dirs(roots.all().skip(1).map(Into::into).collect());
            }
            if let Some(approval) = cx.approval() {
                let label = SafeText::plain(args.description.trim());
                request = request.with_approval(Arc::new(ChildGate::new(approval.clone(), label)));
            }
            if let Some(files) = cx.files() {
                request = request.with_files(files.clone());
            }
            if let Some(tools) = cx.tools() {
                // At the depth limit a child gets no `task`: it cannot nest deeper. A named
                // agent that lists its tools gets those of the caller's alone.
                let mut hidden = match depth + 1 >= config.max_depth {
                    true => vec![NAME.to_owned()],
                    false => Vec::new(),
                };
                if let Some(allowed) = definition.as_ref().and_then(|d| d.tools.as_ref()) {
                    hidden.extend(
                        tools
                            .snapshot()
                            .names()
                            .into_iter()
                            .filter(|name| !allowed.iter().any(|a| a.eq_ignore_ascii_case(name)))
                            .map(str::to_owned),
                    );
                }
                request =
                    request.with_tools(Arc::new(HidingToolRegistry::new(tools.clone(), hidden)));
            }
            let handle = match registry.create(request).await {
                Ok(handle) => handle,
                Err(e) => {
                    owner.dispose().await;
                    return Err(refused(format!("the subagent could not start: {e}")));
                }
            };
            let agent = handle.agent().clone();
            let child = agent.id().clone();
            let parent = registry.get(&caller);
            let note = |phase: SubagentPhase| {
                if let Some(parent) = &parent {
                    record(parent.session(), &cx, &child, phase);
                }
            };
            // The caller's server, model and reasoning, unless the call or the definition
            // names another model.
            let inherited = parent.as_ref().map(|parent| parent.config());
            let model = args
                .model
                .clone()
                .or_else(|| definition.as_ref().and_then(|d| d.model.clone()));
            let mut changes = Vec::new();
            if let Some(parent) = inherited {
                changes.extend(parent.server.map(ConfigChange::Server));
                changes.extend(parent.model.map(ConfigChange::Model));
                changes.extend(parent.thought_level.map(ConfigChange::ThoughtLevel));
            }
            changes.extend(model.map(ConfigChange::Model));
            for change in changes {
                if let Err(e) = agent.configure(change, ConfigOrigin::Flag) {
                    handle.dispose().await;
                    owner.dispose().await;
                    return Err(refused(format!("the subagent could not be set up: {e}")));
                }
            }
            note(SubagentPhase::Started {
                description: args.description.clone(),
            });
            let outcome = match agent.send(UserMessage::user(args.prompt)) {
                Ok(ticket) => {
                    let ticket = ticket.into_future();
                    tokio::pin!(ticket);
                    tokio::select! {
                        biased;
                        outcome = &mut ticket => outcome,
                        () = cx.cancellation().cancelled() => {
                            // The caller's turn is cancelled: so is the child's, with cause
                            // `parent`, and this call ends only once the child's turn did.
                            agent.cancel(CancelCause::Parent);
                            ticket.await
                        }
                    }
                }
                Err(e) => {
                    note(SubagentPhase::Finished {
                        outcome: "did not take the task".into(),
                        failed: true,
                        summary: None,
                    });
                    handle.dispose().await;
                    owner.dispose().await;
                    return Err(refused(format!("the subagent did not take the task: {e}")));
                }
            };
            let answer = last_answer(agent.session());
            let usage = usage_line(agent.session());
            handle.dispose().await;
            owner.dispose().await;
            let (ended, failed) = ending(&outcome);
            note(SubagentPhase::Finished {
                outcome: ended.clone(),
                failed,
                summary: answer.as_deref().map(summary),
            });
            let text = match answer {
                Some(answer) => format!(
                    "{}\n\n[subagent {child}: {ended}; {usage}]",
                    capped(&answer)
                ),
                None => format!("[subagent {child}: {ended}, with no answer; {usage}]"),
            };
            Ok(ToolOutput {
                is_error: failed,
                ..ToolOutput::text(text)
            })
        })
    }

    fn present_call(&self, call: &ToolCallRecord) -> Option<ToolCallView> {
        let args: Value = serde_json::from_str(&call.arguments).ok()?;
        let description = SafeText::plain(args.get("description")?.as_str()?.trim());
        let mut view = ToolCallView::titled(
            format!("Subagent: {description}"),
            ToolKindHint::Other,
            call,
        );
        if let ToolCallView::Generic { summary, .. } = &mut view {
            *summary = Some(description);
        }
        Some(view)
    }
}
