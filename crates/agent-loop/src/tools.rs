//! The tool phase of a step: calls processed in model order, parallel-safe runs pooled up to
//! the cap, approval consulted one call at a time, results appended strictly in model order,
//! and cancellation honoured between parsing a call and running it.

use std::sync::Arc;
use std::time::Instant;

use dsh_agent::record::{PermissionRuleRecord, PlanRecord};
use dsh_kernel::{CancellationToken, TaskHandle};
use dsh_llm::ToolCall;
use dsh_session::{Failure, MAX_EVENT_BYTES, ToolCallRecord, ToolResultRecord, failure_code};
use dsh_tools::{
    ApprovalDecision, ApprovalRequest, PermissionMode, Plan, Tool, ToolContext, ToolError,
    ToolOutput, ToolSet, codes,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::progress::CallProgress;
use crate::repeats::Verdict;
use crate::trace::elapsed_ms;
use crate::writer::Writer;
use dsh_tools::Verdict as RuleSays;

/// Said of a call cancelled before it started.
pub(crate) const NOT_STARTED_TEXT: &str =
    "The call was cancelled before it started; nothing ran. It is safe to retry.";
/// Said of a call still running after the cancel grace.
pub(crate) const OUTCOME_UNKNOWN_TEXT: &str = "The call was cancelled while running and did not stop within the grace period; it may have had effects. Check before retrying.";
/// Said of the repeated call that ended the turn.
const REPEATED_END_TEXT: &str =
    "Not run: the same call was made again after the warning, so dsh ended the turn. Nothing ran.";
/// Said of a call whose barrier failed.
const BARRIER_TEXT: &str =
    "The call did not start: its record could not be made durable. Nothing ran.";

/// Room in one event for the `tool/result` envelope around a result's content.
const RESULT_HEADROOM: usize = 64 * 1024;

pub(crate) enum PhaseEnd {
    Done,
    Cancelled,
    BarrierFailed(Failure),
    /// The model repeated a call after it was told not to: the turn ends.
    Repeated(String),
}

type BodyResult = Result<Result<ToolOutput, ToolError>, String>;

struct Slot {
    call: ToolCall,
    call_seq: Option<u64>,
    result: Option<Outcome>,
    handle: Option<TaskHandle<()>>,
    /// The running body's progress, flushed before its result.
    progress: Option<Arc<CallProgress>>,
    /// The arguments as the repeat guard compares them, for a call it let run: its result
    /// counts toward the streak.
    counted: Option<serde_json::Value>,
    /// How long its body may take once cancelled (its tool's [`Tool::cancel_grace`]).
    grace: Option<std::time::Duration>,
}

struct Outcome {
    content: String,
    is_error: bool,
    error_code: Option<String>,
    meta: Option<serde_json::Value>,
}

fn error(code: &str, content: impl Into<String>) -> Outcome {
    Outcome {
        content: content.into(),
        is_error: true,
        error_code: Some(code.to_owned()),
        meta: None,
    }
}

struct Phase<'w, 'a> {
    writer: &'w mut Writer<'a>,
    turn: u32,
    step: u32,
    token: &'w CancellationToken,
    slots: Vec<Slot>,
    appended: usize,
    running: FuturesUnordered<BoxFuture<'static, (usize, Option<BodyResult>)>>,
}

pub(crate) async fn run_tools(
    writer: &mut Writer<'_>,
    turn: u32,
    step: u32,
    token: &CancellationToken,
    tools: &ToolSet,
    calls: Vec<ToolCall>,
) -> PhaseEnd {
    let cap = writer.agent.shared.config.max_parallel_tools.get() as usize;
    let grace = writer.agent.shared.config.tool_cancel_grace;
    let mut phase = Phase {
        writer,
        turn,
        step,
        token,
        slots: calls
            .into_iter()
            .map(|call| Slot {
                call,
                call_seq: None,
                result: None,
                handle: None,
                progress: None,
                counted: None,
                grace: None,
            })
            .collect(),
        appended: 0,
        running: FuturesUnordered::new(),
    };
    let mut end = PhaseEnd::Done;
    for index in 0..phase.slots.len() {
        if token.is_cancelled() {
            end = PhaseEnd::Cancelled;
            break;
        }
        match phase.start(index, tools, cap).await {
            Ok(()) => {}
            Err(stop) => {
                end = stop;
                break;
            }
        }
    }
    phase.settle(grace).await;
    let not_started = match &end {
        PhaseEnd::BarrierFailed(_) => error(codes::TOOL_NOT_STARTED, BARRIER_TEXT),
        PhaseEnd::Done | PhaseEnd::Cancelled | PhaseEnd::Repeated(_) => {
            error(codes::TOOL_NOT_STARTED, NOT_STARTED_TEXT)
        }
    };
    let appended = phase.appended;
    for slot in &mut phase.slots[appended..] {
        if slot.result.is_none() {
            slot.result = Some(error(codes::TOOL_NOT_STARTED, not_started.content.clone()));
        }
    }
    phase.append_ready();
    end
}

impl Phase<'_, '_> {
    /// Processes call `index` up to starting its body (or recording its result in place).
    async fn start(&mut self, index: usize, tools: &ToolSet, cap: usize) -> Result<(), PhaseEnd> {
        let agent = self.writer.agent;
        let call = self.slots[index].call.clone();
        let args = if call.arguments.trim().is_empty() {
            Ok(serde_json::json!({}))
        } else {
            serde_json::from_str::<serde_json::Value>(&call.arguments)
        };
        let tool = tools.get(&call.name).cloned();
        let record = ToolCallRecord {
            turn: self.turn,
            step: self.step,
            call_id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        };
        // Past the step's limit, nothing runs: a model streaming hundreds of calls gets its
        // first ones done and is told about the rest.
        let limit = agent.options.max_tool_calls.get() as usize;
        if index >= limit {
            self.record_call(index, &record);
            let asked = self.slots.len();
            self.finish(
                index,
                error(
                    codes::TOO_MANY_CALLS,
                    format!(
                        "Not run: one step runs at most {limit} tool calls, and this step made {asked}. Make the calls that still matter in your next step."
                    ),
                ),
            );
            return Ok(());
        }
        let seen = args.as_ref().map_or_else(
            |_| serde_json::Value::String(call.arguments.clone()),
            Clone::clone,
        );
        match self.writer.repeats.verdict(&call.name, &seen) {
            Verdict::Run => self.slots[index].counted = Some(seen),
            Verdict::Refuse(note) => {
                self.record_call(index, &record);
                self.finish(index, error(codes::REPEATED_CALL, note));
                return Ok(());
            }
            Verdict::EndTurn => {
                self.record_call(index, &record);
                self.finish(index, error(codes::REPEATED_CALL, REPEATED_END_TEXT));
                return Err(PhaseEnd::Repeated(call.name.clone()));
            }
        }
        let (tool, args) = match (tool, args) {
            (_, Err(err)) => {
                self.record_call(index, &record);
                self.finish(
                    index,
                    error(
                        codes::INVALID_ARGUMENTS,
                        format!("The arguments are not valid JSON ({err}); the call did not run."),
                    ),
                );
                return Ok(());
            }
            (None, _) => {
                self.record_call(index, &record);
                let names = tools.names().join(", ");
                self.finish(
                    index,
                    error(
                        codes::UNKNOWN_TOOL,
                        format!(
                            "There is no tool named `{}`. Available tools: {names}.",
                            call.name
                        ),
                    ),
                );
                return Ok(());
            }
            (Some(tool), Ok(args)) => (tool, args),
        };
        let remembered = agent.remembered_rules();
        let verdict = agent
            .shared
            .config
            .rules
            .verdict_with(&call.name, &args, &agent.roots(), &remembered)
            .map(|(verdict, rule)| (verdict, rule.text.clone()));
        if let Some((RuleSays::Deny, rule)) = &verdict {
            self.finish(
                index,
                error(
                    codes::TOOL_REJECTED,
                    format!(
                        "The user's permission rule `{rule}` denies this call. It did not run."
                    ),
                ),
            );
            return Ok(());
        }
        let said = verdict.as_ref().map(|(said, _)| *said);
        // The user's `PreToolUse` hooks: they may refuse the call, ask about it, let it
        // through unasked, or rewrite its arguments.
        let (args, said) = match crate::hooks::Seam::of(agent) {
            None => (args, said),
            Some(seam) => {
                let hooked = tokio::select! {
                    biased;
                    _ = self.token.cancelled() => return Err(PhaseEnd::Cancelled),
                    hooked = seam.pre_tool_use(&call.name, &call.id, args, said, self.token) => hooked,
                };
                match hooked {
                    crate::hooks::PreTool::Run { args, said } => (args, said),
                    crate::hooks::PreTool::Refused(reason) => {
                        self.finish(
                            index,
                            error(
                                codes::TOOL_REJECTED,
                                format!("A hook of the user's refused this call: {reason}. It did not run."),
                            ),
                        );
                        return Ok(());
                    }
                }
            }
        };
        let effect = tool.effect(&args, &agent.roots());
        // Asked even in `allow` mode: leaving the sandbox; a command the missing sandbox
        // would have confined, unless a rule allows it; what a rule asks about.
        let asked_in_every_mode = PermissionMode::Allow.asks_under(effect, said);
        if asked_in_every_mode && agent.setup.approval.is_none() {
            // Nobody can say yes to it here (a run with no one to ask): it does not run.
            self.finish(
                index,
                error(
                    codes::TOOL_REJECTED,
                    "This call needs the user's yes (it runs outside the sandbox, or a \
                     permission rule asks about it), and this session has no one to ask. It \
                     did not run; do it another way, or tell the user what you need."
                        .to_owned(),
                ),
            );
            return Ok(());
        }
        // A rule's ask asks in every mode, and its allow skips the question, except for
        // leaving the sandbox, which is always asked.
        let approval = agent
            .setup
            .approval
            .clone()
            .filter(|gate| gate.mode().asks_under(effect, said));
        let pooled = tool.parallel_safe() && approval.is_none();
        let room = if pooled { cap } else { 1 };
        // An exclusive call waits for every earlier body; a pooled one for a free place. The
        // call is recorded only once it is about to run, so a cancel while it waits leaves it
        // unrecorded: it never started.
        while self.running.len() >= room || (!pooled && !self.running.is_empty()) {
            if !self.collect_one().await {
                return Err(PhaseEnd::Cancelled);
            }
        }
        if self.token.is_cancelled() {
            return Err(PhaseEnd::Cancelled);
        }
        self.record_call(index, &record);
        let barrier = tokio::select! {
            biased;
            _ = self.token.cancelled() => return Err(PhaseEnd::Cancelled),
            flushed = agent.store.flush(&agent.id) => flushed,
        };
        if let Err(err) = barrier {
            return Err(PhaseEnd::BarrierFailed(Failure::new(
                failure_code::PERSISTENCE,
                format!("the barrier before a tool body failed: {err}"),
            )));
        }
        if let Some(gate) = approval {
            let preview = tokio::select! {
                biased;
                _ = self.token.cancelled() => return Err(PhaseEnd::Cancelled),
                // A preview that panics shows nothing; the question is still asked.
                preview = dsh_kernel::contain::catch_future(tool.preview(&args, &self.context(index))) => {
                    preview.ok().flatten()
                }
            };
            let request = ApprovalRequest {
                session_id: agent.id.clone(),
                turn: self.turn,
                step: self.step,
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: args.clone(),
                effect,
                preview,
                // A presenter that panics shows the arguments instead.
                shown: dsh_kernel::contain::catch(|| tool.present_call(&record))
                    .ok()
                    .flatten(),
                cancel: self.token.clone(),
                subagent: None,
            };
            // The user's `Notification` hooks run while the question waits.
            let seam = crate::hooks::Seam::of(agent);
            let waiting = format!(
                "dsh needs your permission to use {}",
                dsh_hooks::claude_tool_name(&call.name)
            );
            let notified = async {
                if let Some(seam) = &seam {
                    seam.notify(crate::hooks::PERMISSION, waiting, self.token)
                        .await;
                }
            };
            let decision = tokio::select! {
                biased;
                _ = self.token.cancelled() => return Err(PhaseEnd::Cancelled),
                (decision, ()) = async { tokio::join!(gate.decide(request), notified) } => decision,
            };
            match decision {
                ApprovalDecision::Allow => {}
                ApprovalDecision::AllowAlways { rule } => self.remember(index, rule),
                ApprovalDecision::Reject { reason } => {
                    self.finish(
                        index,
                        error(
                            codes::TOOL_REJECTED,
                            format!("The user declined this call: {reason}. It did not run."),
                        ),
                    );
                    return Ok(());
                }
                ApprovalDecision::Cancelled => {
                    self.finish(index, error(codes::TOOL_NOT_STARTED, NOT_STARTED_TEXT));
                    return Ok(());
                }
            }
        }
        self.spawn(index, tool, args)?;
        if !pooled {
            while !self.running.is_empty() {
                if !self.collect_one().await {
                    return Err(PhaseEnd::Cancelled);
                }
            }
        }
        Ok(())
    }

    /// An "always" answer: its rule holds for the rest of the session and is remembered for
    /// the project, and the log says so (`permission/rule`). A rule that is none (a gate's
    /// mistake) allowed its call alone: nothing is recorded.
    fn remember(&mut self, index: usize, rule: String) {
        let agent = self.writer.agent;
        let project = match agent.remember(&rule) {
            Ok(project) => project,
            Err(e) => {
                tracing::warn!("an \"always\" answer gave no rule; it allowed its call alone: {e}");
                return;
            }
        };
        let record = PermissionRuleRecord {
            turn: self.turn,
            step: self.step,
            call_id: self.slots[index].call.id.clone(),
            rule,
            project,
        };
        self.writer
            .append(&agent.shared.kinds.permission_rule, &record);
    }

    fn record_call(&mut self, index: usize, record: &ToolCallRecord) {
        let kinds = &self.writer.agent.shared.kinds;
        self.slots[index].call_seq = self.writer.append(&kinds.tool_call, record).map(|e| e.seq);
    }

    /// The context a body (or a preview) of call `index` gets, before progress is attached.
    fn context(&self, index: usize) -> ToolContext {
        let agent = self.writer.agent;
        let cx = ToolContext::for_caller(
            agent.id.clone(),
            agent.tools_scope.clone(),
            Some(agent.session.header().cwd.clone().into()),
            self.token.clone(),
        )
        .with_call(self.slots[index].call.id.clone(), self.turn, self.step)
        .with_extra_roots(agent.setup.additional_dirs.clone())
        .with_approval(agent.setup.approval.clone())
        .with_steps_left(agent.options.max_steps.get().saturating_sub(self.step));
        let cx = match agent.tool_registry() {
            Ok(tools) => cx.with_tools(tools),
            Err(_) => cx,
        };
        match agent.file_access() {
            Some(files) => cx.with_files(files),
            None => cx,
        }
    }

    fn spawn(
        &mut self,
        index: usize,
        tool: Arc<dyn Tool>,
        args: serde_json::Value,
    ) -> Result<(), PhaseEnd> {
        let agent = self.writer.agent;
        let cx = self.context(index);
        let progress = CallProgress::new(
            agent.session.clone(),
            agent.shared.kinds.progress.clone(),
            self.turn,
            self.step,
            self.slots[index].call.id.clone(),
        );
        let cx = if agent.scope.spawn(progress.clone().pump()).is_ok() {
            self.slots[index].progress = Some(progress.clone());
            cx.with_progress(progress.sink())
        } else {
            cx
        };
        let (tx, rx) = oneshot::channel::<BodyResult>();
        self.slots[index].grace = Some(tool.cancel_grace(agent.shared.config.tool_cancel_grace));
        let seam = crate::hooks::Seam::of(agent);
        let (name, call_id, token) = (
            self.slots[index].call.name.clone(),
            self.slots[index].call.id.clone(),
            self.token.clone(),
        );
        let body = async move {
            let hooked_args = seam.as_ref().map(|_| args.clone());
            let mut outcome = tool.call(args, cx).await;
            // The user's `PostToolUse` hooks read the result; what they say is added to it.
            if let (Some(seam), Some(args), Ok(output)) = (&seam, &hooked_args, &mut outcome) {
                seam.post_tool_use(&name, &call_id, args, output, &token)
                    .await;
            }
            outcome
        };
        let call = &self.slots[index].call;
        let span = tracing::debug_span!("tool_call", tool = %call.name, call_id = %call.id);
        let spawned = agent.scope.spawn(
            async move {
                let started = Instant::now();
                let outcome = dsh_kernel::contain::catch_future(body).await;
                let failed = !matches!(outcome, Ok(Ok(ref output)) if !output.is_error);
                tracing::debug!(failed, elapsed_ms = elapsed_ms(started), "tool call ended");
                let _ = tx.send(outcome);
            }
            .instrument(span),
        );
        match spawned {
            Ok(handle) => {
                self.slots[index].handle = Some(handle);
                self.running
                    .push(Box::pin(async move { (index, rx.await.ok()) }));
                Ok(())
            }
            Err(err) => {
                tracing::error!(agent = %agent.id, "cannot start a tool body: {err}");
                Err(PhaseEnd::Cancelled)
            }
        }
    }

    /// Waits for one running body; false if the turn was cancelled first.
    async fn collect_one(&mut self) -> bool {
        let next = tokio::select! {
            biased;
            _ = self.token.cancelled() => return false,
            next = self.running.next() => next,
        };
        if let Some((index, result)) = next {
            self.record(index, result);
        }
        true
    }

    /// Waits for every running body; once the turn is cancelled, for at most `grace` more,
    /// then aborts and joins what is left.
    async fn settle(&mut self, grace: std::time::Duration) {
        while !self.running.is_empty() && !self.token.is_cancelled() {
            self.collect_one().await;
        }
        if !self.running.is_empty() {
            // The longest grace a running body's tool asks for: a body that waits for child
            // agents gets theirs too.
            let grace = self
                .slots
                .iter()
                .filter(|slot| slot.result.is_none() && slot.handle.is_some())
                .filter_map(|slot| slot.grace)
                .fold(grace, std::cmp::max);
            let deadline = tokio::time::sleep(grace);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    biased;
                    next = self.running.next() => match next {
                        Some((index, result)) => self.record(index, result),
                        None => break,
                    },
                    _ = &mut deadline => break,
                }
            }
        }
        for index in 0..self.slots.len() {
            if self.slots[index].result.is_none()
                && let Some(handle) = self.slots[index].handle.take()
            {
                handle.abort();
                let _ = handle.join().await;
                self.finish(
                    index,
                    error(codes::TOOL_OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_TEXT),
                );
            }
        }
        self.running.clear();
    }

    fn record(&mut self, index: usize, result: Option<BodyResult>) {
        let outcome = match result {
            Some(Ok(Ok(output))) => {
                if output.content.len() > MAX_EVENT_BYTES - RESULT_HEADROOM {
                    error(
                        codes::OUTPUT_TOO_LARGE,
                        format!(
                            "The result was {} bytes, over the limit of {} bytes for one event; it was not recorded.",
                            output.content.len(),
                            MAX_EVENT_BYTES - RESULT_HEADROOM
                        ),
                    )
                } else {
                    Outcome {
                        content: output.content,
                        is_error: output.is_error,
                        error_code: None,
                        meta: output.meta,
                    }
                }
            }
            Some(Ok(Err(tool_error))) => {
                let code = if dsh_tools::is_result_code(&tool_error.code) {
                    tool_error.code
                } else {
                    "tool_error".to_owned()
                };
                error(&code, tool_error.message)
            }
            Some(Err(panic)) => error(codes::TOOL_PANICKED, format!("The tool panicked: {panic}")),
            None => error(codes::TOOL_OUTCOME_UNKNOWN, OUTCOME_UNKNOWN_TEXT),
        };
        self.slots[index].handle = None;
        self.finish(index, outcome);
    }

    fn finish(&mut self, index: usize, outcome: Outcome) {
        if let Some(progress) = self.slots[index].progress.take() {
            progress.finish();
        }
        self.slots[index].result = Some(outcome);
        self.append_ready();
    }

    /// Appends the results that are next in model order.
    fn append_ready(&mut self) {
        while self.appended < self.slots.len() {
            let slot = &mut self.slots[self.appended];
            let Some(outcome) = slot.result.take() else {
                return;
            };
            if let Some(args) = slot.counted.take() {
                self.writer
                    .repeats
                    .finished(&slot.call.name, &args, &outcome.content);
            }
            let record = ToolResultRecord {
                turn: self.turn,
                step: self.step,
                call_id: slot.call.id.clone(),
                name: slot.call.name.clone(),
                content: outcome.content,
                is_error: outcome.is_error,
                error_code: outcome.error_code,
                meta: outcome.meta,
                call_seq: slot.call_seq,
            };
            let kinds = &self.writer.agent.shared.kinds;
            // A plan the call handed over becomes the session's, right after its result.
            let plan = (!record.is_error)
                .then(|| Plan::of(record.meta.as_ref()))
                .flatten()
                .map(|plan| PlanRecord {
                    turn: record.turn,
                    step: record.step,
                    call_id: record.call_id.clone(),
                    entries: plan.entries,
                });
            self.writer.append(&kinds.tool_result, &record);
            if let Some(plan) = plan {
                self.writer.append(&kinds.plan, &plan);
            }
            self.appended += 1;
        }
    }
}
