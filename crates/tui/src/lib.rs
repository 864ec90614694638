//! Seam role: consumer — dsh's interactive terminal, the third front end of the turn view
//! (`dsh-view`), beside `dsh run` and `dsh acp`. `dsh` with no subcommand runs it. Its design
//! is the RFC "The interactive terminal"
//! (`docs/rfc/implemented/feature/2026-12-06-interactive-terminal.md`).
//!
//! It uses the agent, session and tool seams through their traits only, like the ACP
//! bridge: [`run`] takes the runtime's scope and finds the services there.
//!
//! The parts: the pure state machine ([`App`]) with the composer, the transcript, the slash
//! menu, the pickers and questions; the approval [`Gate`], whose "always" answers become remembered rules; the
//! session observer; the driver loop; and the terminal guard, the only code that writes to
//! the terminal.
//!
//! # Invariants
//!
//! - The composer is pure state: every edit is a method, and what is sent is exactly what
//!   was typed or pasted, however a paste was shown.
//! - The composer always holds at least one line, and its cursor is always inside the text.
//! - A line given to the scrollback never changes; whatever may still change (an unfinished
//!   line, a running call) stays live.
//! - Every string the terminal shows is safe: dsh's own words, the view's safe text, or a
//!   raw field (model, tool, user or file text) filtered.
//! - The terminal is given back on every exit path, a panic included.
//! - Nothing is drawn without a cause: an idle session uses no CPU.
#![deny(missing_docs)]

mod app;
mod attach;
mod composer;
mod driver;
mod gate;
mod history;
mod keyboard;
mod markdown;
mod menu;
mod observer;
mod question;
mod sessions;
mod status;
mod terminal;
mod transcript;

use std::path::PathBuf;
use std::sync::Arc;

use dsh_agent::commands::Commands;
use dsh_agent::{AgentRegistry, ConfigChange};
use dsh_kernel::Scope;
use dsh_llm::Prices;
use dsh_session::{SessionId, SessionPersistence, SessionStore};
use dsh_tools::safe_text::SafeText;
use dsh_tools::{PermissionMode, ToolRegistry};
use tokio::sync::mpsc;

pub use app::{App, Effect, Input, Pick};
pub use composer::{Composer, Edit, Enter};
pub use gate::{Answer, Gate, Question};
pub use history::History;
pub use markdown::Markdown;
pub use menu::{Entry, Menu};
pub use status::Status;
pub use transcript::{Palette, Transcript};

/// Which session the terminal opens with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Open {
    /// A new one, created with the first prompt.
    New,
    /// This stored one (an id or a unique prefix of 8 or more characters).
    Resume(String),
    /// The one the user picks from this directory's sessions.
    Pick,
}

/// What an interactive session is started with.
pub struct Launch {
    /// The runtime's scope: the services, and the owner of the sessions opened.
    pub scope: Scope,
    /// The permission mode to start in.
    pub mode: PermissionMode,
    /// The session to open.
    pub open: Open,
    /// Settings given on the command line, applied to every session opened.
    pub explicit: Vec<ConfigChange>,
    /// The server, recorded with each session so `dsh -c` goes back to it.
    pub server: Option<String>,
    /// The status line of a fresh session.
    pub status: Status,
    /// Colours (`NO_COLOR` turns them off).
    pub color: bool,
    /// The prompt history file.
    pub history: PathBuf,
    /// The project directory: where sessions start and `@` completes.
    pub root: PathBuf,
    /// The user's command directory (`~/.config/dsh/commands`).
    pub user_commands: Option<PathBuf>,
    /// The model's prices, for the cost.
    pub prices: Option<Prices>,
    /// The context window, for the status line before the first answer.
    pub window: Option<u64>,
    /// What to say when the server refuses the key (where dsh reads it from).
    pub auth_hint: Option<String>,
    /// Lines to show first (safe text): what the session cannot do here, such as a sandbox
    /// the kernel does not give.
    pub notices: Vec<String>,
}

/// Why the terminal could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal could not be set up or written.
    #[error("the terminal failed: {0}")]
    Terminal(#[from] std::io::Error),
    /// A service the session needs is missing from the runtime.
    #[error("{0}")]
    Service(String),
}

/// How an interactive session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    /// The last session shown, when one was opened.
    pub session: Option<SessionId>,
    /// The exit status: 0 when the user quit, 129 when the terminal hung up, 143 on SIGTERM.
    pub status: u8,
}

/// Runs an interactive session on the terminal until the user quits, the terminal goes away
/// or dsh is told to end.
pub async fn run(launch: Launch) -> Result<Finished, TuiError> {
    let scope = launch.scope.clone();
    let missing = |what: &str, e: dsh_kernel::KernelError| {
        TuiError::Service(format!("no {what} in the runtime: {e}"))
    };
    let services = driver::Services {
        registry: scope
            .require::<dyn AgentRegistry>()
            .map_err(|e| missing("agent service", e))?,
        store: scope
            .require::<SessionStore>()
            .map_err(|e| missing("session store", e))?,
        persistence: scope
            .require::<dyn SessionPersistence>()
            .map_err(|e| missing("session storage", e))?,
        tools: scope
            .require::<dyn ToolRegistry>()
            .map_err(|e| missing("tool registry", e))?,
        scope,
    };
    let (feed, inputs) = mpsc::unbounded_channel();
    let (ask, questions) = mpsc::unbounded_channel();
    let gate = Arc::new(Gate::new(launch.mode, ask));
    let dir = launch.root.display().to_string();
    let (commands, warnings) = Commands::discover(&launch.root, launch.user_commands.as_deref());
    let palette = Palette {
        color: launch.color,
    };
    let composer = Composer::new(history::load(&launch.history, &dir));
    let mut status = launch.status.clone();
    status.context = launch.window.map(|w| (0, w));
    let mut app = App::new(
        composer,
        palette,
        status.clone(),
        commands,
        launch.root.clone(),
    );
    if let Some(hint) = launch.auth_hint {
        app = app.with_auth_hint(hint);
    }
    let now = std::time::Instant::now();
    for notice in launch.notices {
        app.input(Input::Notice(SafeText::plain(&notice)), now);
    }
    for warning in warnings {
        app.input(
            Input::Notice(format!("warning: {}", SafeText::plain(&warning))),
            now,
        );
    }
    let opening = driver::Opening {
        gate,
        root: launch.root,
        explicit: launch.explicit,
        server: launch.server,
        prices: launch.prices,
        window: launch.window,
        status,
        history: launch.history,
    };
    let mut driver = driver::Driver::new(services, opening, feed);
    let mut screen = terminal::Screen::open()?;
    match launch.open {
        Open::New => {}
        Open::Resume(id) => {
            if let Err(message) = driver.resume(&id, &mut app).await {
                app.input(Input::Notice(message), now);
            }
        }
        Open::Pick => driver.pick_session(),
    }
    let ran = driver.run(&mut app, &mut screen, inputs, questions).await;
    screen.restore()?;
    Ok(Finished {
        session: driver.last_session(),
        status: ran?,
    })
}
