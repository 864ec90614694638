//! The command line, parsed by clap. Only shapes are checked here; what the values mean
//! (a script name, a URL, a session id) is checked after parsing, with the exit codes the
//! README documents.

use std::num::NonZeroU32;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use dsh_tools::PermissionMode;

/// `dsh <semver> (<git hash>)`, answered by clap before any other work.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("DSH_GIT_HASH"), ")");

/// dsh: a model in a loop with bash, every session kept as a durable log. Without a command,
/// an interactive session on the terminal.
#[derive(Debug, Parser)]
#[command(
    name = "dsh",
    version = VERSION,
    about = "An agent harness: a model in a loop with tools, every session kept as a durable log.\nWithout a command, dsh opens an interactive session on this terminal (dsh -c continues the newest one here).",
    long_about = None
)]
pub struct Cli {
    /// Options every command shares.
    #[command(flatten)]
    pub global: Global,
    /// The interactive session's options (`dsh` without a command).
    #[command(flatten)]
    pub interactive: InteractiveArgs,
    /// What to do; without one, an interactive session.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `dsh` without a command: the interactive terminal.
#[derive(Debug, Args)]
pub struct InteractiveArgs {
    /// Continue the newest session started in the current directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_here: bool,
    /// Open a stored session: its id (or a unique prefix of 8+ characters); without one, a
    /// picker of this directory's sessions.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// When edits and commands ask first (default: the `tui.permission` setting, else
    /// accept-edits: edits in the project and sandboxed commands run unasked).
    #[arg(long, value_parser = permission_modes(TUI_ASK))]
    pub permission: Option<PermissionMode>,
    /// Model calls per turn, 1..=10000 (default 50).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_steps: Option<u32>,
}

impl InteractiveArgs {
    /// The flag given, when one was: before a command it would be silently ignored.
    pub fn given(&self) -> Option<&'static str> {
        if self.continue_here {
            Some("-c")
        } else if self.resume.is_some() {
            Some("--resume")
        } else if self.permission.is_some() {
            Some("--permission")
        } else if self.max_steps.is_some() {
            Some("--max-steps")
        } else {
            None
        }
    }
}

/// Options every command shares.
#[derive(Debug, Args)]
pub struct Global {
    /// The configuration file (default: $XDG_CONFIG_HOME/dsh/config.toml).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where sessions are kept (default: $XDG_DATA_HOME/dsh).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// The model name the server is asked for.
    #[arg(long, global = true, value_name = "M")]
    pub model: Option<String>,
    /// An OpenAI-compatible API (default: https://api.deepseek.com).
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// How hard a thinking model thinks.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub reasoning: Option<Reasoning>,
    /// The model's output token limit (default: the model's own where dsh knows it, else
    /// 8192).
    #[arg(long, global = true, value_name = "N")]
    pub max_tokens: Option<NonZeroU32>,
    /// Sampling temperature, 0 to 2 (default: the server's).
    #[arg(long, global = true, value_name = "T")]
    pub temperature: Option<f64>,
    /// The model's context window, in tokens (default: known for DeepSeek's models,
    /// 32768 for others).
    #[arg(long, global = true, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// A scripted offline model: a built-in name (`demo`) or a script file.
    #[arg(long, global = true, value_name = "SCRIPT")]
    pub replay: Option<String>,
    /// Replaces the built-in system prompt (the environment and the project's instructions
    /// are still sent).
    #[arg(long, global = true, value_name = "FILE")]
    pub system_prompt_file: Option<PathBuf>,
    /// What commands may touch: read-only, workspace-write (the project's directories, no
    /// network) or full-access (default: the `[sandbox] policy` setting, else
    /// workspace-write).
    #[arg(long, global = true, value_name = "POLICY", value_parser = ["read-only", "workspace-write", "full-access"])]
    pub sandbox: Option<String>,
    /// Sends no AGENTS.md (or CLAUDE.md) from the project to the model.
    #[arg(long, global = true)]
    pub no_project_instructions: bool,
    /// More log output on stderr (-v debug, -vv trace); ignored when DSH_LOG is set.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one turn: send a prompt, let the model use bash, print the answer.
    Run(RunArgs),
    /// Every effective setting and where it came from (the key is never shown).
    Config {
        /// One JSON object: `{key: {value, source}}`.
        #[arg(long)]
        json: bool,
    },
    /// The models the configured server offers (with --replay: the built-in scripts).
    Models {
        /// One JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed.
    Acp {
        /// Whether bash asks the editor before each call (default: the `[acp]` file
        /// setting, else ask).
        #[arg(long, value_parser = permission_modes(ACP_ASK))]
        permission: Option<PermissionMode>,
        /// Model calls per turn, 1..=10000 (default 50).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        max_steps: Option<u32>,
    },
    /// Stored sessions: list, show, remove.
    Sessions {
        /// What to do with them.
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// The "always" answers remembered for this project; `rm` forgets one.
    Permissions {
        /// What to do with them (none: list them).
        #[command(subcommand)]
        command: Option<PermissionsCommand>,
        /// Every project's, not only this one's.
        #[arg(long)]
        all: bool,
        /// One JSON object: `{project: [rule, …]}`.
        #[arg(long)]
        json: bool,
    },
    /// The hooks this directory's sessions run, with their sources; `trust` trusts the
    /// project's hook files as they are now.
    Hooks {
        /// What to do (none: list them).
        #[command(subcommand)]
        command: Option<HooksCommand>,
    },
}

/// `dsh hooks …`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Trust this project's `.dsh/hooks.toml` and `.claude/settings.json` as they are now.
    Trust,
}

/// `dsh permissions …`.
#[derive(Debug, Subcommand)]
pub enum PermissionsCommand {
    /// Forget a remembered rule of this project: its number in the list, or the rule.
    Rm {
        /// The rule's number in `dsh permissions`, or the rule as listed.
        rule: String,
    },
}

/// `dsh sessions …`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Stored sessions, newest first (headers only: fast at any count).
    List {
        /// One JSON object per session.
        #[arg(long)]
        json: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Only sessions started in the current directory (not elsewhere in its project).
        #[arg(long)]
        here: bool,
        /// Sessions of every project, not only of the current one (every clone of its
        /// repository, at the same path within it).
        #[arg(long)]
        all_projects: bool,
        /// Also sessions in which no model ever answered (a run that failed first), and
        /// subagents' sessions.
        #[arg(long)]
        all: bool,
    },
    /// Render a stored transcript; never changes the log.
    Show {
        /// The session id, or a unique prefix of at least 8 characters.
        id: String,
        /// The stored events, one per line.
        #[arg(long)]
        json: bool,
        /// When to colour the output.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
        /// The system message the model was last sent (with --json: every recorded
        /// version, with its sources).
        #[arg(long)]
        system: bool,
        /// Show each subagent's work under the call that started it.
        #[arg(long)]
        children: bool,
    },
    /// Delete a stored session.
    Rm {
        /// The session id, or a unique prefix of at least 8 characters.
        id: String,
    },
    /// Write sessions to stdout in the log format every store keeps (all of them without
    /// ids), for `dsh sessions import` into another store.
    Export {
        /// Session ids, or unique prefixes of at least 8 characters.
        ids: Vec<String>,
    },
    /// Store the sessions of an export (a file, or stdin without one or with `-`) that are
    /// not stored yet.
    Import {
        /// The export to read.
        file: Option<std::path::PathBuf>,
    },
    /// Give a stored session a title (its first prompt's first line until then).
    Rename {
        /// The session id, or a unique prefix of at least 8 characters.
        id: String,
        /// The new title: one line, cut at 80 characters.
        title: String,
    },
}

/// `dsh run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt; `-` reads stdin. Without it, piped stdin or the replay script's prompt.
    pub prompt: Option<String>,
    /// Resume a stored session (its id, or a unique prefix of 8+ characters) and append one
    /// turn.
    #[arg(long, value_name = "ID", conflicts_with = "continue_here")]
    pub session: Option<String>,
    /// Resume the newest session started in the current directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_here: bool,
    /// Compact the resumed session first: the model writes a summary that later requests
    /// start from (the log keeps everything). Without a prompt, only that.
    #[arg(long)]
    pub compact: bool,
    /// One JSON object per line on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Model calls per turn, 1..=10000 (default 50).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_steps: Option<u32>,
    /// Whether edits and commands ask on the terminal first (`ask` denies without a
    /// terminal; default: the `permission` setting, else allow).
    #[arg(long, value_parser = permission_modes(RUN_ASK))]
    pub permission: Option<PermissionMode>,
}

/// What `ask` means for `dsh acp --permission`.
const ACP_ASK: &str = "Ask the editor before each edit and command";
/// What `ask` means for `dsh --permission`.
const TUI_ASK: &str = "Ask in the terminal before each edit and command";
/// What `ask` means for `dsh run --permission`.
const RUN_ASK: &str =
    "Ask on the controlling terminal before each edit and command; deny when there is none";

/// `--permission`: the permission modes by name, `ask` described as the command asks.
fn permission_modes(ask: &'static str) -> impl TypedValueParser<Value = PermissionMode> {
    let help = |mode: PermissionMode| match mode {
        PermissionMode::Ask => ask,
        PermissionMode::AcceptEdits => {
            "Edit files in the project without asking; ask before commands and edits elsewhere"
        }
        PermissionMode::Allow => "Run tools without asking",
    };
    let values = PermissionMode::ALL.map(|mode| PossibleValue::new(mode.as_str()).help(help(mode)));
    PossibleValuesParser::new(values).try_map(|name| name.parse::<PermissionMode>())
}

/// `--color`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set or TERM is dumb.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// `--reasoning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Reasoning {
    /// The server's default.
    Default,
    /// Thinking off.
    Off,
    /// Little.
    Low,
    /// Some.
    Medium,
    /// Much.
    High,
    /// The most the model offers.
    Max,
}
