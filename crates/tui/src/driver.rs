//! The loop that runs an interactive session: keys from the terminal, view events from the
//! session, questions from the gate, and the app's effects carried out on the agent.
//!
//! Keys come first: the `select!` is biased towards the keyboard (after the signals that end
//! it), and view events are taken
//! in batches (all that arrived) before one frame is drawn, so a keystroke never waits
//! behind a stream. Nothing is drawn without a cause: a key, an event, a resize, or a
//! spinner tick while a turn runs (ten a second).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::Event;
use dsh_agent::{
    AgentHandle, AgentRegistry, CancelCause, ConfigChange, ConfigOrigin, CreateAgent, MessageId,
    ResumeAgent, TurnOutcome, TurnTicket, UserMessage,
};
use dsh_kernel::{CancellationToken, Scope};
use dsh_llm::{Model, Prices, RetryNotice};
use dsh_session::{Failure, Interest, ListQuery, SessionId, SessionPersistence, SessionStore};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{ApprovalGate, McpToolHost, ToolRegistry};
use dsh_view::Projector;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};

use crate::app::{App, Effect, Input};
use crate::gate::{Gate, Question};
use crate::keyboard::Read;
use crate::observer::Observer;
use crate::status::Status;
use crate::terminal::Screen;

/// The exit status after the terminal hung up: 128 + SIGHUP.
const HANGUP: u8 = 129;
/// The exit status after SIGTERM: 128 + SIGTERM.
const TERMINATED: u8 = 143;
/// How long the server's model list is waited for.
const MODEL_LIST_WAIT: Duration = Duration::from_secs(10);
/// How many lines of a resumed session's past go to the scrollback.
const REPLAYED_LINES: usize = 400;
/// How long the end waits for the session's teardown (a command's grace) before forcing.
const TEARDOWN: Duration = Duration::from_secs(5);

/// The services an interactive session uses, from the runtime's scope.
pub(crate) struct Services {
    pub scope: Scope,
    pub registry: Arc<dyn AgentRegistry>,
    pub store: Arc<SessionStore>,
    pub persistence: Arc<dyn SessionPersistence>,
    pub tools: Arc<dyn ToolRegistry>,
}

/// What the session opens with, and how it records itself.
pub(crate) struct Opening {
    pub gate: Arc<Gate>,
    pub root: PathBuf,
    /// Settings given on the command line: applied to every session opened.
    pub explicit: Vec<ConfigChange>,
    /// The server, recorded with each session so `dsh -c` goes back to it.
    pub server: Option<String>,
    pub prices: Option<Prices>,
    pub window: Option<u64>,
    /// The status line of a fresh session.
    pub status: Status,
    pub history: PathBuf,
}

/// The loop's state beside the app: the session shown and its follower.
pub(crate) struct Driver {
    services: Services,
    opening: Opening,
    agent: Option<AgentHandle>,
    observer: Option<Arc<Observer>>,
    /// Settings chosen before a session existed.
    pending: Vec<ConfigChange>,
    /// The last session shown, for the words after the end.
    last: Option<SessionId>,
    /// The id of the session shown, for the retry notices of its requests.
    shown: Arc<parking_lot::Mutex<Option<String>>>,
    /// The configured MCP servers have started (or failed): the first request offers their
    /// tools, so prompts sent before wait for them.
    mcp_ready: bool,
    /// Prompts sent before that.
    deferred: Vec<UserMessage>,
    feed: mpsc::UnboundedSender<Input>,
}

impl Driver {
    pub(crate) fn new(
        services: Services,
        opening: Opening,
        feed: mpsc::UnboundedSender<Input>,
    ) -> Driver {
        let shown = Arc::new(parking_lot::Mutex::new(None::<String>));
        // A request's retries, as they happen: the spinner says why nothing streams.
        let retries = feed.clone();
        let this = shown.clone();
        let listening = services.scope.on(move |notice: &RetryNotice| {
            if notice.session_id.is_some() && notice.session_id == *this.lock() {
                let _ = retries.send(Input::Retrying(notice.line()));
            }
        });
        if let Err(e) = listening {
            tracing::debug!("retries will not be shown: {e}");
        }
        Driver {
            services,
            opening,
            agent: None,
            observer: None,
            pending: Vec::new(),
            last: None,
            shown,
            mcp_ready: false,
            deferred: Vec::new(),
            feed,
        }
    }

    /// The session shown, once one was opened.
    pub(crate) fn session(&self) -> Option<SessionId> {
        self.agent.as_ref().map(|h| h.agent().id().clone())
    }

    /// The last session shown, open or closed.
    pub(crate) fn last_session(&self) -> Option<SessionId> {
        self.session().or_else(|| self.last.clone())
    }

    /// Opens the picker of this directory's sessions.
    pub(crate) fn pick_session(&self) {
        self.list_sessions();
    }

    /// Runs the loop until the user quits (status 0), the terminal hangs up (129) or dsh is
    /// told to end (143).
    pub(crate) async fn run(
        &mut self,
        app: &mut App,
        screen: &mut Screen,
        mut inputs: mpsc::UnboundedReceiver<Input>,
        mut questions: mpsc::UnboundedReceiver<Question>,
    ) -> std::io::Result<u8> {
        let mut keys = crate::keyboard::start()?;
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut mcp = self.mcp_start();
        // The terminal closing (SIGHUP) or a kill (SIGTERM) ends the session in order, and
        // the terminal is given back.
        let mut hangup = signal(SignalKind::hangup())?;
        let mut terminate = signal(SignalKind::terminate())?;
        self.frame(app, screen)?;
        loop {
            let now = Instant::now();
            let effects = tokio::select! {
                biased;
                _ = hangup.recv() => {
                    self.end().await;
                    return Ok(HANGUP);
                }
                _ = terminate.recv() => {
                    self.end().await;
                    return Ok(TERMINATED);
                }
                read = keys.recv() => match read {
                    Some(Read::Event(Event::Key(key))) => app.input(Input::Key(key), now),
                    Some(Read::Event(Event::Paste(text))) => app.input(Input::Paste(text), now),
                    Some(Read::Event(_)) => continue,
                    Some(Read::Resized(resize)) => {
                        screen.resized(resize.cursor().await)?;
                        Vec::new()
                    }
                    // The terminal is gone: nobody is left to answer or to watch.
                    None => {
                        self.end().await;
                        return Ok(HANGUP);
                    }
                },
                Some(question) = questions.recv() => app.input(Input::Asked(question), now),
                Some(input) = inputs.recv() => {
                    let mut effects = app.input(input, now);
                    // Everything that arrived meanwhile goes into the same frame.
                    while let Ok(input) = inputs.try_recv() {
                        effects.extend(app.input(input, now));
                    }
                    effects
                }
                problems = async {
                    match mcp.as_mut() {
                        Some(ready) => ready.await.unwrap_or_default(),
                        None => std::future::pending().await,
                    }
                }, if mcp.is_some() => {
                    mcp = None;
                    let mut effects = Vec::new();
                    for problem in problems {
                        let line = format!("warning: {}", SafeText::plain(&problem));
                        effects.extend(app.input(Input::Notice(line), now));
                    }
                    self.mcp_ready = true;
                    for message in std::mem::take(&mut self.deferred) {
                        effects.push(Effect::Send(message));
                    }
                    effects
                }
                _ = tick.tick(), if app.running() => Vec::new(),
            };
            for effect in effects {
                self.carry_out(effect, app).await;
            }
            if app.quitting() {
                self.end().await;
                return Ok(0);
            }
            self.frame(app, screen)?;
        }
    }

    /// Waits for the configured MCP servers in the background; `None` when there are none
    /// to wait for.
    fn mcp_start(&mut self) -> Option<oneshot::Receiver<Vec<String>>> {
        let Some(host) = self.services.scope.get::<dyn McpToolHost>() else {
            self.mcp_ready = true;
            return None;
        };
        let (done, ready) = oneshot::channel();
        tokio::spawn(async move {
            let _ = done.send(host.ready().await);
        });
        Some(ready)
    }

    /// Draws one frame: finished lines to the scrollback, then the viewport.
    pub(crate) fn frame(&self, app: &mut App, screen: &mut Screen) -> std::io::Result<()> {
        if screen.resize_pending()? {
            // The resize's own event draws, once the viewport was found again.
            return Ok(());
        }
        let now = Instant::now();
        let (width, rows) = screen.size()?;
        let lines = app.take_scrollback();
        screen.set_height(app.height(width, rows, now))?;
        screen.insert(lines)?;
        screen.draw(|area, buf| app.render(area, buf, now))
    }

    /// Cancels what runs and closes the session.
    async fn end(&mut self) {
        if let Some(handle) = self.agent.take() {
            self.last = Some(handle.agent().id().clone());
            handle.agent().cancel(CancelCause::User);
            if tokio::time::timeout(TEARDOWN, handle.dispose())
                .await
                .is_err()
            {
                tracing::warn!("the session's teardown took longer than {TEARDOWN:?}");
            }
        }
    }

    async fn carry_out(&mut self, effect: Effect, app: &mut App) {
        match effect {
            Effect::Send(message) if !self.mcp_ready => self.deferred.push(message),
            Effect::Send(message) => match self.ensure().await {
                Ok(handle) => {
                    let ticket = handle.agent().send(message);
                    self.follow(ticket.map_err(|e| e.to_string()));
                }
                Err(failure) => self.settle(failure),
            },
            Effect::Steer(message) => match &self.agent {
                Some(handle) => {
                    let ticket = handle.agent().steer(message);
                    self.follow(ticket.map_err(|e| e.to_string()));
                }
                None => self.settle("no session is open to steer".into()),
            },
            Effect::Cancel => {
                if let Some(handle) = &self.agent {
                    handle.agent().cancel(CancelCause::User);
                }
            }
            Effect::Compact => match &self.agent {
                Some(handle) => {
                    let ticket = handle.agent().compact(MessageId::mint());
                    self.follow(ticket.map_err(|e| e.to_string()));
                }
                None => self.settle("there is nothing to compact yet".into()),
            },
            Effect::Configure(change) => self.configure(change),
            Effect::Answer(question, answer) => question.answer(answer),
            Effect::Remember(text) => {
                let dir = self.opening.root.display().to_string();
                crate::history::append(&self.opening.history, &dir, &text);
            }
            Effect::ListModels => self.list_models(),
            Effect::ListSessions => self.list_sessions(),
            Effect::ListFiles => {
                let root = self.opening.root.clone();
                let feed = self.feed.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = feed.send(Input::Files(crate::attach::list_files(&root)));
                });
            }
            Effect::NewSession => {
                self.close().await;
                let status = self.opening.status.clone();
                let _ = self.feed.send(Input::Switched { status });
                let _ = self.feed.send(Input::Notice(
                    "a new session starts with the next prompt".into(),
                ));
            }
            Effect::Resume(id) => {
                if let Err(message) = self.resume(&id, app).await {
                    let _ = self.feed.send(Input::Notice(message));
                }
            }
            Effect::Quit => {}
        }
    }

    /// A ticket's outcome goes back to the app when it resolves.
    fn follow(&self, ticket: Result<TurnTicket, String>) {
        match ticket {
            Ok(ticket) => {
                let feed = self.feed.clone();
                tokio::spawn(async move {
                    let _ = feed.send(Input::Settled(ticket.outcome().await));
                });
            }
            Err(message) => self.settle(message),
        }
    }

    /// Settles a ticket that was never given: the request was refused.
    fn settle(&self, message: String) {
        let failure = Failure::new("refused", SafeText::plain(&message));
        let _ = self
            .feed
            .send(Input::Settled(TurnOutcome::Failed { failure }));
    }

    fn configure(&mut self, change: ConfigChange) {
        if let ConfigChange::Mode(mode) = &change {
            self.opening.gate.set_mode(*mode);
        }
        match &self.agent {
            Some(handle) => {
                if let Err(e) = handle.agent().configure(change, ConfigOrigin::Command) {
                    let _ = self
                        .feed
                        .send(Input::Notice(format!("the setting was refused: {e}")));
                }
            }
            None => self.pending.push(change),
        }
    }

    /// The session shown, opened now when there is none yet.
    async fn ensure(&mut self) -> Result<&AgentHandle, String> {
        if self.agent.is_none() {
            let owner = self.services.scope.clone();
            let create = CreateAgent::new(owner)
                .with_cwd(self.opening.root.clone())
                .with_approval(self.opening.gate.clone() as Arc<dyn ApprovalGate>);
            let handle = self
                .services
                .registry
                .create(create)
                .await
                .map_err(|e| format!("cannot create a session: {e}"))?;
            self.adopt(handle, None)?;
        }
        self.agent
            .as_ref()
            .ok_or_else(|| "no session is open".to_owned())
    }

    /// Makes `handle` the session shown: the settings of this run applied, the server
    /// recorded, its past (when resumed) replayed, its events followed.
    fn adopt(&mut self, handle: AgentHandle, app: Option<&mut App>) -> Result<(), String> {
        let agent = handle.agent().clone();
        let mut changes = self.opening.explicit.clone();
        changes.extend(self.opening.server.clone().map(ConfigChange::Server));
        changes.append(&mut self.pending);
        for change in changes {
            if let Err(e) = agent.configure(change, ConfigOrigin::Flag) {
                return Err(format!("cannot apply the settings to the session: {e}"));
            }
        }
        let mut projector = Projector::new(agent.id().clone());
        if let Some(window) = self.opening.window {
            projector.set_window(window);
        }
        projector.set_prices(self.opening.prices.clone());
        let observer = Observer::new(projector, self.services.tools.clone(), self.feed.clone());
        if let Some(app) = app {
            let past = observer.replay(&agent.session().events());
            app.input(past, Instant::now());
            let mut lines = app.take_scrollback();
            let skipped = lines.len().saturating_sub(REPLAYED_LINES);
            if skipped > 0 {
                lines.drain(..skipped);
                app.input(
                    Input::Notice(format!(
                        "… {skipped} earlier lines: dsh sessions show {}",
                        agent.id()
                    )),
                    Instant::now(),
                );
                let note = app.take_scrollback();
                lines.splice(0..0, note);
            }
            app.replayed(lines);
        }
        self.services
            .store
            // Every session: the child agents the session's calls start are shown too.
            .subscribe(&self.services.scope, Interest::All, observer.clone())
            .map_err(|e| format!("cannot follow the session: {e}"))?;
        self.observer = Some(observer);
        *self.shown.lock() = Some(agent.id().to_string());
        self.agent = Some(handle);
        Ok(())
    }

    /// Closes the session shown (a turn in it is cancelled).
    async fn close(&mut self) {
        if let Some(observer) = self.observer.take() {
            observer.stop();
        }
        self.end().await;
    }

    /// Opens the stored session `id` (or the one it is a unique prefix of) in place of the
    /// one shown.
    pub(crate) async fn resume(&mut self, id: &str, app: &mut App) -> Result<(), String> {
        let found = self.find(id).await?;
        if self.session().as_ref() == Some(&found) {
            return Ok(());
        }
        self.close().await;
        let resume = ResumeAgent::new(self.services.scope.clone(), found.clone())
            .with_approval(self.opening.gate.clone() as Arc<dyn ApprovalGate>);
        let handle = self
            .services
            .registry
            .resume(resume)
            .await
            .map_err(|e| format!("cannot resume session {found}: {e}"))?;
        let config = handle.agent().config();
        let mut status = self.opening.status.clone();
        if let Some(model) = &config.model {
            status.model = SafeText::plain(model);
        }
        if let Some(mode) = config.mode {
            status.mode = mode.as_str().to_owned();
            self.opening.gate.set_mode(mode);
        }
        app.input(Input::Switched { status }, Instant::now());
        self.adopt(handle, Some(app))?;
        app.input(
            Input::Notice(format!("resumed session {found}")),
            Instant::now(),
        );
        Ok(())
    }

    /// The stored session `id` names: itself, or the one session it is a prefix of.
    async fn find(&self, id: &str) -> Result<SessionId, String> {
        let listing = self
            .services
            .persistence
            .list(&ListQuery::default())
            .await
            .map_err(|e| format!("cannot list the sessions: {e}"))?;
        let matching: Vec<&SessionId> = listing
            .sessions
            .iter()
            .map(|s| &s.header.id)
            .filter(|s| s.as_str() == id || (id.len() >= 8 && s.as_str().starts_with(id)))
            .collect();
        match matching.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(format!("no session {}", SafeText::plain(id))),
            _ => Err(format!(
                "{} sessions start with {}; give more of the id",
                matching.len(),
                SafeText::plain(id)
            )),
        }
    }

    fn list_models(&self) {
        let feed = self.feed.clone();
        let model = self.services.scope.get::<dyn Model>();
        tokio::spawn(async move {
            let Some(model) = model else {
                let _ = feed.send(Input::Notice("no model is configured".into()));
                return;
            };
            let cancel = CancellationToken::new();
            match tokio::time::timeout(MODEL_LIST_WAIT, model.models(cancel.clone())).await {
                Ok(Ok(models)) => {
                    let _ = feed.send(Input::Models(models));
                }
                Ok(Err(e)) => {
                    let _ = feed.send(Input::Notice(format!(
                        "cannot list the server's models ({}); /model NAME sets one",
                        SafeText::plain(&e.to_string())
                    )));
                }
                Err(_) => {
                    cancel.cancel();
                    let _ = feed.send(Input::Notice(
                        "the server did not list its models in time; /model NAME sets one".into(),
                    ));
                }
            }
        });
    }

    fn list_sessions(&self) {
        let feed = self.feed.clone();
        let persistence = self.services.persistence.clone();
        let cwd = self.opening.root.display().to_string();
        let current = self.session();
        tokio::spawn(async move {
            let listing = persistence
                .list(&ListQuery {
                    cwd: Some(cwd),
                    project: None,
                })
                .await;
            let entries = match listing {
                Ok(listing) => listing
                    .sessions
                    .into_iter()
                    .filter(|s| Some(&s.header.id) != current.as_ref())
                    .map(crate::sessions::entry)
                    .collect(),
                Err(e) => {
                    let _ = feed.send(Input::Notice(format!("cannot list the sessions: {e}")));
                    return;
                }
            };
            let _ = feed.send(Input::Sessions(entries));
        });
    }
}
