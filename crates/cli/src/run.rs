//! `dsh run`: one prompt, one turn, then an orderly shutdown.
//!
//! Order matters for the user's data: everything that can be refused (settings, model, key,
//! prompt) is checked before the sessions directory or a session is created, and every path
//! after composition ends in `Runtime::shutdown`, so the log is closed however the turn ends.

use dsh_llm::RetryNotice;
use dsh_shell::{ShellExecutor, TaskState};
use dsh_tools::safe_text::SafeText;
use std::sync::Arc;
use std::time::Duration;

use dsh_agent::commands::{Commands, Invocation};
use dsh_agent::{
    Agent, AgentHandle, AgentRegistry, CancelCause, ConfigChange, ConfigOrigin, CreateAgent,
    ResumeAgent, TurnOutcome, TurnTicket, UserMessage,
};
use dsh_kernel::Runtime;
use std::path::PathBuf;

use dsh_session::{
    Interest, ListQuery, SessionId, SessionPersistence, SessionStore, TurnEndReason,
};
use dsh_shell_local::LocalShellExecutor;
use dsh_tools::{
    ApprovalGate, McpToolHost, PermissionMode, PermissionRules, RememberedRules, Roots, Rule,
    ToolRegistry,
};

use crate::args::{ColorChoice, Global, RunArgs};
use crate::ask::TerminalGate;
use crate::exit::{self, Failure, report};
use crate::json_lines::{Line, SCHEMA_VERSION, Totals};
use crate::model;
use crate::render::{Renderer, View, fit, stderr_width};
use crate::settings::{CommandFlags, Settings, Source};
use crate::signals::{Quit, Signals};
use crate::store::Store;

/// How long a forced teardown (second Ctrl-C, SIGTERM) may take.
const FORCED_TEARDOWN: Duration = Duration::from_secs(2);

/// Runs `dsh run`; returns the exit status.
pub async fn run(global: &Global, args: &RunArgs) -> u8 {
    let view = view_for(args);
    match prepare(global, args).await {
        Ok(prepared) => execute(prepared, view).await,
        Err(failure) => report(&failure, view),
    }
}

fn view_for(args: &RunArgs) -> View {
    if args.json {
        return View::Json;
    }
    let terminal = crate::output::is_terminal();
    let no_color = std::env::var("NO_COLOR").is_ok_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color && !dumb,
    };
    View::Human {
        color,
        split: !terminal,
    }
}

/// What `text` asks for when it names a slash command of this directory or the user's; a
/// name that is no command is refused with those there are, never sent to the model.
fn slash_command(settings: &Settings, text: &str) -> Result<Option<Invocation>, Failure> {
    if !text.trim_start().starts_with('/') {
        return Ok(None);
    }
    let Ok(cwd) = std::env::current_dir() else {
        return Ok(None);
    };
    let (commands, warnings) = Commands::discover(&cwd, settings.user_commands().as_deref());
    for warning in warnings {
        eprintln!("warning: {}", SafeText::plain(&warning));
    }
    if let Some(unknown) = commands.unknown(text) {
        return Err(Failure::usage(unknown));
    }
    Ok(commands.invoke(text))
}

/// Which session the turn goes to.
pub enum Target {
    New,
    /// `--session`: an id or a unique prefix.
    Named(String),
    /// `--continue`: the newest session of the working directory.
    Newest,
}

struct Prepared {
    settings: Settings,
    chosen: model::Chosen,
    /// `None` with `--compact` alone.
    prompt: Option<String>,
    /// `--compact`: compact the resumed session before the prompt.
    compact: bool,
    target: Target,
    /// `--permission ask`: the terminal's say before each gated call.
    approval: Option<Arc<TerminalGate>>,
}

async fn prepare(global: &Global, args: &RunArgs) -> Result<Prepared, Failure> {
    let flags = CommandFlags {
        max_steps: args.max_steps,
        run_permission: args.permission,
        ..CommandFlags::default()
    };
    let settings = Settings::resolve(global, flags)?;
    let target = match (&args.session, args.continue_here) {
        (Some(id), _) => Target::Named(id.clone()),
        (None, true) => Target::Newest,
        (None, false) => Target::New,
    };
    let settings = crate::remember::settings_for(settings, global, flags, &target).await?;
    if settings.replay.is_some() && global.model.is_some() {
        eprintln!("warning: --model is ignored with --replay");
    }
    let chosen = model::choose(&settings)?;
    if let Some(server) = &chosen.server {
        model::check_offered(&settings, server).await?;
    }
    // `--compact` alone compacts and stops: stdin and the script's prompt are not read.
    let prompt = match (args.compact, args.prompt.as_deref()) {
        (true, None) => None,
        (_, arg) => Some(crate::prompt::resolve(
            arg,
            chosen.script_prompt.as_deref(),
        )?),
    };
    // A slash command: `/compact` is `--compact`; another is the prompt it expands to.
    let (prompt, compact) = match prompt {
        Some(text) => match slash_command(&settings, &text)? {
            Some(Invocation::Compact) => (None, true),
            Some(Invocation::Prompt(expanded)) => (Some(expanded), args.compact),
            None => (Some(text), args.compact),
        },
        None => (None, args.compact),
    };
    if compact && matches!(target, Target::New) {
        return Err(Failure::usage(
            "compacting needs a stored session: add -c (the newest one here) or --session ID",
        ));
    }
    // The question goes to the terminal itself: only the user's choice, NO_COLOR and a dumb
    // terminal turn its colour off.
    let colour = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var("NO_COLOR").map_or(true, |v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    };
    // Even in `allow` mode a few calls ask (leaving the sandbox, a command the missing
    // sandbox would have confined, a rule's ask): the terminal is the one to ask.
    let approval = Some(Arc::new(TerminalGate::new(
        settings.permission.value,
        colour,
    )));
    Ok(Prepared {
        settings,
        chosen,
        prompt,
        compact,
        target,
        approval,
    })
}

async fn execute(prepared: Prepared, view: View) -> u8 {
    let store = match Store::prepared(&prepared.settings) {
        Ok(store) => store,
        Err(failure) => return report(&failure, view),
    };
    let replay = prepared.chosen.replay.clone();
    let label = prepared.chosen.label.clone();
    let runtime =
        match crate::compose::compose(&prepared.settings, &store, Some(prepared.chosen.plugin))
            .await
        {
            Ok(runtime) => runtime,
            Err(failure) => return report(&failure, view),
        };
    crate::hooks::ask_trust(&runtime).await;
    for notice in crate::compose::start_notices(&runtime, &prepared.settings) {
        eprintln!("warning: {notice}");
    }
    let rules = match crate::compose::permission_rules(&prepared.settings) {
        Ok(rules) => rules,
        Err(failure) => return report(&failure, view),
    };
    // The configured MCP servers start in the background; the first request offers their
    // tools, so it waits for them (each within its startup timeout).
    if let Some(host) = runtime.scope().get::<dyn McpToolHost>() {
        for problem in host.ready().await {
            eprintln!("warning: {}", SafeText::plain(&problem));
        }
    }
    let status = turn(
        &runtime,
        Asked {
            compact: prepared.compact,
            prompt: prepared.prompt.as_deref(),
        },
        Start {
            target: prepared.target,
            approval: prepared.approval,
            auth_hint: model::auth_hint(&prepared.settings),
            prices: prepared.settings.prices.clone(),
            explicit: explicit(&prepared.settings),
            server: prepared
                .settings
                .replay
                .is_none()
                .then(|| prepared.settings.base_url.value.clone()),
            rules: Arc::new(rules),
            remembered: crate::compose::remembered(&prepared.settings),
        },
        view,
        &label,
        &store,
    )
    .await;
    runtime.shutdown().await;
    if let Some(replay) = replay {
        let unused = replay.unused_entries().len();
        if unused > 0 {
            eprintln!("replay: {unused} entries unused");
        }
    }
    status
}

/// The stored session `target` names, if it names one.
pub async fn find(
    persistence: &dyn SessionPersistence,
    target: &Target,
    store: &Store,
) -> Result<Option<SessionId>, Failure> {
    match target {
        Target::New => Ok(None),
        Target::Named(arg) => Ok(Some(crate::lookup::resolve(persistence, store, arg).await?)),
        Target::Newest => {
            let cwd = std::env::current_dir().map_err(|e| {
                Failure::internal(format!("cannot read the working directory: {e}"))
            })?;
            // The newest of this project: started in this clone or another one, on this
            // machine or another sharing the store.
            let project = dsh_session::project_of(&cwd);
            let cwd = cwd.display().to_string();
            let listing = persistence
                .list(&ListQuery {
                    cwd: None,
                    project: Some(project),
                })
                .await
                .map_err(|e| Failure::internal(e.to_string()))?;
            match listing.sessions.first() {
                Some(newest) => Ok(Some(newest.header.id.clone())),
                None => Err(Failure {
                    status: 1,
                    code: "unknown_session",
                    message: format!(
                        "no session was started in {cwd}; run without -c to start one"
                    ),
                }),
            }
        }
    }
}

/// Which session the turn goes to, who approves its calls, and what to say when the server
/// refuses the key.
struct Start {
    target: Target,
    approval: Option<Arc<TerminalGate>>,
    auth_hint: String,
    /// The model's prices, for the footer's cost.
    prices: Option<dsh_llm::Prices>,
    /// The settings given for this run by flag or environment: on a resumed session that
    /// chose otherwise (in an editor's picker), they win, and the change is recorded.
    explicit: Vec<ConfigChange>,
    /// The server the requests go to (none for a scripted model): recorded with the session
    /// when it is new to it, so a later `-c` goes back there.
    server: Option<String>,
    /// The configuration's permission rules and where "always" answers are remembered:
    /// what the loop weighs before a question, so the view knows which calls ask.
    rules: Arc<PermissionRules>,
    remembered: Arc<dyn RememberedRules>,
}

/// Which calls the loop will ask about, as it decides: the mode, the permission rules and
/// the project's remembered "always" answers.
fn asks(
    gate: &Arc<TerminalGate>,
    tools: &Arc<dyn ToolRegistry>,
    rules: Arc<PermissionRules>,
    remembered: &dyn RememberedRules,
    cwd: PathBuf,
) -> crate::render::Asks {
    let (remembered, _) = Rule::parse_each(&remembered.rules(&cwd));
    let (gate, tools) = (gate.clone(), tools.clone());
    let roots = Roots::new(cwd, Vec::new());
    Arc::new(move |tool: &str, args: &serde_json::Value| {
        let Some(found) = tools.get(tool) else {
            return false;
        };
        let said = rules
            .verdict_with(tool, args, &roots, &remembered)
            .map(|(said, _)| said);
        gate.mode().asks_under(found.effect(args, &roots), said)
    })
}

/// The model and reasoning level this run was given explicitly (a flag or a variable).
pub fn explicit(settings: &Settings) -> Vec<ConfigChange> {
    let given = |source: &Source| matches!(source, Source::Flag(_) | Source::Env(_));
    let mut changes = Vec::new();
    if given(&settings.model.source) {
        changes.push(ConfigChange::Model(settings.model.value.clone()));
    }
    if let (true, Some(level)) = (given(&settings.reasoning.source), settings.reasoning.value) {
        changes.push(ConfigChange::ThoughtLevel(level));
    }
    changes
}

async fn start(
    runtime: &Runtime,
    how: Start,
    store: &Store,
) -> Result<(AgentHandle, bool), Failure> {
    let persistence = runtime
        .scope()
        .require::<dyn SessionPersistence>()
        .map_err(|e| Failure::internal(format!("no session storage: {e}")))?;
    let session = find(&*persistence, &how.target, store).await?;
    let registry = runtime
        .scope()
        .require::<dyn AgentRegistry>()
        .map_err(|e| Failure::internal(format!("no agent service: {e}")))?;
    let owner = runtime.scope().clone();
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::internal(format!("cannot read the working directory: {e}")))?;
    match session {
        Some(id) => {
            let mut resume = ResumeAgent::new(owner, id.clone());
            if let Some(gate) = how.approval {
                resume = resume.with_approval(gate as Arc<dyn ApprovalGate>);
            }
            let handle = registry
                .resume(resume)
                .await
                .map_err(|e| Failure::internal(format!("cannot resume session {id}: {e}")))?;
            for change in how.explicit {
                // Recorded only when the session had chosen otherwise.
                if let Err(e) = handle.agent().configure(change, ConfigOrigin::Flag) {
                    handle.dispose().await;
                    return Err(Failure::internal(format!(
                        "cannot apply the settings to session {id}: {e}"
                    )));
                }
            }
            remember_server(&handle, how.server).await?;
            Ok((handle, true))
        }
        None => {
            let mut create = CreateAgent::new(owner).with_cwd(cwd);
            if let Some(gate) = how.approval {
                create = create.with_approval(gate as Arc<dyn ApprovalGate>);
            }
            let handle = registry
                .create(create)
                .await
                .map_err(|e| Failure::internal(format!("cannot create a session: {e}")))?;
            remember_server(&handle, how.server).await?;
            Ok((handle, false))
        }
    }
}

/// Records the server with the session when it is new to it (nothing when it is the one
/// recorded last).
async fn remember_server(handle: &AgentHandle, server: Option<String>) -> Result<(), Failure> {
    let Some(server) = server else {
        return Ok(());
    };
    if let Err(e) = handle
        .agent()
        .configure(ConfigChange::Server(server), ConfigOrigin::Flag)
    {
        handle.dispose().await;
        return Err(Failure::internal(format!(
            "cannot record the server with the session: {e}"
        )));
    }
    Ok(())
}

/// What the run asks of the session: a compaction first, a prompt, or both.
struct Asked<'a> {
    compact: bool,
    prompt: Option<&'a str>,
}

/// How waiting for a ticket ended.
enum Waited {
    Outcome(TurnOutcome),
    /// A second Ctrl-C, SIGTERM or SIGHUP: exit now with this status.
    Forced(u8),
}

/// Waits for `ticket`; the first Ctrl-C of the run cancels the turn, a second one (or
/// SIGTERM, SIGHUP) forces the exit, and a closed stdout cancels and exits.
async fn wait(
    ticket: TurnTicket,
    agent: &Arc<dyn Agent>,
    signals: &mut Signals,
    interrupts: &mut u32,
    renderer: &Renderer,
) -> Waited {
    let mut outcome = Box::pin(ticket.outcome());
    loop {
        tokio::select! {
            outcome = &mut outcome => return Waited::Outcome(outcome),
            quit = signals.next() => match quit {
                Quit::Interrupt if *interrupts == 0 => {
                    *interrupts += 1;
                    // The terminal echoed `^C` where the cursor was; the line is said whole.
                    renderer.interject("^C cancelling… (Ctrl-C again to quit now)");
                    agent.cancel(CancelCause::User);
                }
                Quit::Interrupt | Quit::Terminate | Quit::Hangup => {
                    return Waited::Forced(quit.status());
                }
            },
            () = renderer.closed.notified() => {
                agent.cancel(CancelCause::User);
                let _ = (&mut outcome).await;
                return Waited::Forced(exit::STDOUT_CLOSED);
            }
        }
    }
}

async fn turn(
    runtime: &Arc<Runtime>,
    asked: Asked<'_>,
    how: Start,
    view: View,
    label: &str,
    store: &Store,
) -> u8 {
    let mode = how
        .approval
        .as_ref()
        .map_or(PermissionMode::Allow, |gate| gate.mode());
    let gate = how.approval.clone();
    let (rules, remembered) = (how.rules.clone(), how.remembered.clone());
    let auth_hint = how.auth_hint.clone();
    let prices = how.prices.clone();
    let (handle, resumed) = match start(runtime, how, store).await {
        Ok(started) => started,
        Err(failure) => return report(&failure, view),
    };
    let agent = handle.agent().clone();
    let id = agent.id().clone();
    let tools = match runtime.scope().require::<dyn ToolRegistry>() {
        Ok(tools) => tools,
        Err(e) => {
            handle.dispose().await;
            return report(&Failure::internal(format!("no tool registry: {e}")), view);
        }
    };
    let renderer = Renderer::new(view, tools.clone());
    if let Some(gate) = gate {
        // The question shows the command; it is shown as running only after a yes.
        let cwd = PathBuf::from(agent.session().header().cwd.clone());
        renderer.asking(asks(&gate, &tools, rules, remembered.as_ref(), cwd));
        let shown = renderer.clone();
        gate.on_allow(Box::new(move |call_id| shown.allowed(call_id)));
        let shown = renderer.clone();
        gate.on_ask(Box::new(move |_| shown.stop_spinner()));
    }
    // Every session is watched: the child agents the session's calls start are shown too.
    renderer.follow(&id);
    let subscribed = runtime
        .scope()
        .require::<SessionStore>()
        .map_err(|e| e.to_string())
        .and_then(|store| {
            store
                .subscribe(runtime.scope(), Interest::All, renderer.clone())
                .map_err(|e| e.to_string())
        });
    if let Err(e) = subscribed {
        handle.dispose().await;
        return report(
            &Failure::internal(format!("cannot watch the session: {e}")),
            view,
        );
    }
    // Retries of this session's requests, as they happen: the user sees why nothing streams.
    let notices = renderer.clone();
    let this = id.as_str().to_owned();
    let listening = runtime.scope().on(move |notice: &RetryNotice| {
        if notice.session_id.as_deref() == Some(this.as_str()) {
            notices.notice(&notice.line());
        }
    });
    if let Err(e) = listening {
        tracing::debug!("retries will not be shown: {e}");
    }
    let how = if resumed { "resumed" } else { "new" };
    let recorded = agent.session().header().cwd.clone();
    let elsewhere = match std::env::current_dir() {
        Ok(here) if here.display().to_string() != recorded => format!(" · cwd {recorded}"),
        _ => String::new(),
    };
    let permission = match mode {
        PermissionMode::Ask => "edits and commands ask first",
        PermissionMode::AcceptEdits => "edits run, commands ask first",
        PermissionMode::Allow => "tools run without asking",
    };
    let mut header = vec!["dsh".to_owned(), format!("session {id} ({how}){elsewhere}")];
    header.extend([label.to_owned(), permission.to_owned()]);
    eprintln!("{}", fit(&header, stderr_width()));
    if view == View::Json {
        let info = runtime
            .scope()
            .require::<dyn dsh_llm::Model>()
            .ok()
            .map(|m| m.info().clone());
        let path = match runtime.scope().require::<dyn SessionPersistence>() {
            Ok(p) => p.locate(&id).await.ok().flatten().and_then(|l| l.path),
            Err(_) => None,
        };
        renderer.json_line(&Line::Session {
            schema_version: SCHEMA_VERSION,
            session_id: id.to_string(),
            resumed,
            model: info,
            data_dir: store.data_dir(),
            path: path.map(|p| p.display().to_string()),
        });
    }
    renderer.set_window(agent.options().context_window.get());
    renderer.set_prices(prices);
    let mut signals = match Signals::new() {
        Ok(signals) => signals,
        Err(failure) => {
            handle.dispose().await;
            return report(&failure, view);
        }
    };
    let mut interrupts = 0u32;
    let mut outcome: Option<TurnOutcome> = None;
    let mut forced: Option<u8> = None;
    if asked.compact {
        let ticket = match agent.compact(dsh_agent::MessageId::mint()) {
            Ok(ticket) => ticket,
            Err(e) => {
                handle.dispose().await;
                return report(
                    &Failure::internal(format!("the compaction was refused: {e}")),
                    view,
                );
            }
        };
        match wait(ticket, &agent, &mut signals, &mut interrupts, &renderer).await {
            Waited::Outcome(ended) => outcome = Some(ended),
            Waited::Forced(status) => forced = Some(status),
        }
    }
    // The prompt goes only after a compaction that was made: one cancelled or failed ends
    // the run with its reason.
    let compacted = outcome.as_ref().is_none_or(|o| {
        matches!(
            o,
            TurnOutcome::Ended {
                reason: TurnEndReason::Completed,
                ..
            }
        )
    });
    if let Some(prompt) = asked.prompt
        && forced.is_none()
        && compacted
    {
        let ticket = match agent.send(UserMessage::user(prompt)) {
            Ok(ticket) => ticket,
            Err(e) => {
                handle.dispose().await;
                return report(
                    &Failure::usage(format!("the prompt was refused: {e}")),
                    view,
                );
            }
        };
        match wait(ticket, &agent, &mut signals, &mut interrupts, &renderer).await {
            Waited::Outcome(ended) => outcome = Some(ended),
            Waited::Forced(status) => forced = Some(status),
        }
    }
    // A command cut short by a forced exit never sends its result: its spinner goes now.
    renderer.stop_spinner();
    if let Some(status) = forced {
        announce_stopped_tasks(runtime, &id);
        force_teardown(runtime, &handle).await;
        return status;
    }
    announce_stopped_tasks(runtime, &id);
    // Teardown waits out the grace of a command that ignores SIGTERM; a Ctrl-C (or SIGTERM,
    // SIGHUP) meanwhile ends it at once.
    let quit = tokio::select! {
        () = handle.dispose() => None,
        quit = signals.next() => Some(quit),
    };
    if let Some(quit) = quit {
        force_teardown(runtime, &handle).await;
        return quit.status();
    }
    let Some(outcome) = outcome else {
        return 1;
    };
    finish(&renderer, &outcome, view, &id);
    if let TurnOutcome::Ended {
        reason: TurnEndReason::Error { failure },
        ..
    } = &outcome
        && failure.code == "auth"
    {
        eprintln!("  {auth_hint}");
    }
    if renderer
        .stdout_closed
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        return exit::STDOUT_CLOSED;
    }
    exit::for_outcome(&outcome)
}

/// Says which of the session's background tasks the end of the run stops: they die with dsh,
/// and a server the user expected to keep must not vanish silently.
fn announce_stopped_tasks(runtime: &Runtime, id: &SessionId) {
    let Ok(executor) = runtime.scope().require::<dyn ShellExecutor>() else {
        return;
    };
    for task in executor.list() {
        let running = matches!(task.state, TaskState::Running);
        if task.background && running && executor.owner_of(task.id).as_deref() == Some(id.as_str())
        {
            let command = task.command.lines().next().unwrap_or_default();
            let mut shown: String = command.chars().take(60).collect();
            if shown.len() < command.len() || task.command.lines().nth(1).is_some() {
                shown.push('…');
            }
            eprintln!(
                "dsh · stopped background task {} ({})",
                task.id,
                SafeText::plain(&shown)
            );
        }
    }
}

/// Kills every tool process group at once, then disposes with a bound.
async fn force_teardown(runtime: &Runtime, handle: &AgentHandle) {
    if let Ok(executor) = runtime.scope().require::<LocalShellExecutor>() {
        executor.kill_all().await;
    }
    let _ = tokio::time::timeout(FORCED_TEARDOWN, handle.dispose()).await;
}

fn reason_text(reason: &TurnEndReason) -> String {
    match reason {
        TurnEndReason::Completed => "completed".into(),
        TurnEndReason::MaxTokens => "stopped at the output token limit".into(),
        TurnEndReason::MaxSteps => "stopped at the step limit".into(),
        TurnEndReason::RepeatedCall { tool } => format!(
            "stopped: the model kept repeating the same {} call",
            SafeText::plain(tool)
        ),
        TurnEndReason::Refusal => "the model refused".into(),
        TurnEndReason::Aborted { .. } => "cancelled".into(),
        TurnEndReason::Error { failure } => {
            // A failure's message may quote a server's body.
            format!(
                "error: {} ({})",
                SafeText::plain(&failure.message),
                failure.code
            )
        }
        TurnEndReason::Interrupted => "interrupted".into(),
        TurnEndReason::Unknown => "ended".into(),
    }
}

fn finish(renderer: &Renderer, outcome: &TurnOutcome, view: View, id: &SessionId) {
    let tally = renderer.totals();
    let (steps, input, output, cache) = (tally.steps, tally.input, tally.output, tally.cache_hit);
    let (turn, reason) = match outcome {
        TurnOutcome::Ended { turn, reason } => (Some(*turn), reason.clone()),
        TurnOutcome::Discarded { cause } => (None, TurnEndReason::Aborted { cause: *cause }),
        TurnOutcome::Failed { failure } => (
            None,
            TurnEndReason::Error {
                failure: failure.clone(),
            },
        ),
    };
    if view == View::Json {
        let (mut cause, mut error, mut tool) = (None, None, None);
        match &reason {
            TurnEndReason::Aborted { cause: why } => cause = Some(*why),
            TurnEndReason::Error { failure } => error = Some(failure),
            TurnEndReason::RepeatedCall { tool: name } => tool = Some(name.as_str()),
            TurnEndReason::Completed
            | TurnEndReason::MaxTokens
            | TurnEndReason::MaxSteps
            | TurnEndReason::Refusal
            | TurnEndReason::Interrupted
            | TurnEndReason::Unknown => {}
        }
        renderer.json_line(&Line::TurnEnd {
            turn,
            reason: reason.kind(),
            answered: (tally.steps > 0).then_some(tally.answered),
            steps,
            usage: Totals {
                input_tokens: input,
                output_tokens: output,
                cache_hit_tokens: cache,
            },
            cause,
            error,
            tool,
        });
    }
    // A model that stopped after saying nothing (every call failed, then an empty message)
    // did not complete the task: a script must be able to tell.
    // A compaction alone asks the model for no answer.
    let unanswered =
        matches!(reason, TurnEndReason::Completed) && tally.steps > 0 && !tally.answered;
    let reason_words = match unanswered {
        true => "ended without an answer".to_owned(),
        false => reason_text(&reason),
    };
    let colour = matches!(view, View::Human { color: true, .. });
    let reason_words = match (&reason, colour) {
        (_, false) => reason_words,
        (TurnEndReason::Completed, true) if unanswered => {
            format!("\x1b[33m{reason_words}\x1b[0m")
        }
        (TurnEndReason::Completed, true) => format!("\x1b[32m{reason_words}\x1b[0m"),
        (TurnEndReason::Error { .. }, true) => format!("\x1b[31m{reason_words}\x1b[0m"),
        (_, true) => format!("\x1b[33m{reason_words}\x1b[0m"),
    };
    let steps = dsh_tools::words::count(steps as usize, "step", "steps");
    let mut footer = vec!["dsh".to_owned(), reason_words, steps];
    footer.extend(tally.footer());
    footer.push(format!("saved: dsh sessions show {id}"));
    eprintln!("{}", fit(&footer, stderr_width()));
}
