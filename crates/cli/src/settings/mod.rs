//! The effective configuration, computed once for every command: each setting of the table
//! (`table.rs`) from its flag, else its environment variable, else the configuration file,
//! else its default — checked against its kind wherever it came from, and remembering its
//! source for `dsh config`. The texts are then read once into typed values (a permission
//! mode, a max-tokens field, durations), so no command parses a setting again.

mod file;
mod flags;
pub mod mcp;
mod table;

use std::fmt;
use std::num::{NonZeroU32, NonZeroU64};
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_acp::PermissionMode;
use dsh_llm::ReasoningEffort;
use dsh_llm_openai::MaxTokensField;

use crate::args::Global;
use crate::exit::Failure;
use crate::remember::Remembered;

use table::*;
pub use table::{KEYS, Key, Kind};

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File {
        path: PathBuf,
        line: usize,
    },
    Env(&'static str),
    Flag(&'static str),
    /// The resumed session's own: the server and model it ran with.
    Session,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "file {}:{line}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Flag(name) => write!(f, "flag {name}"),
            Source::Session => f.write_str("the session"),
        }
    }
}

/// A value and its source.
#[derive(Clone, Debug)]
pub struct Set<T> {
    pub value: T,
    pub source: Source,
}

/// One setting as resolved: its checked text (`None`: unset) and source.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub key: &'static Key,
    pub text: Option<String>,
    pub source: Source,
}

/// The flags of the command being run that set a setting (besides the global ones).
#[derive(Clone, Copy, Debug, Default)]
pub struct CommandFlags {
    /// `dsh run --max-steps`, `dsh acp --max-steps`.
    pub max_steps: Option<u32>,
    /// `dsh acp --permission`.
    pub acp_permission: Option<PermissionMode>,
    /// `dsh run --permission`.
    pub run_permission: Option<PermissionMode>,
    /// `dsh --permission` (the interactive terminal).
    pub tui_permission: Option<PermissionMode>,
}

/// What every command runs with.
#[derive(Debug)]
pub struct Settings {
    /// The file read, and whether it was there.
    pub config_file: Option<(PathBuf, bool)>,
    /// Every setting of the table, in its order (what `dsh config` shows).
    pub resolved: Vec<Resolved>,
    pub data_dir: Set<PathBuf>,
    /// `sessions_url`: sessions in this PostgreSQL database instead of the data directory.
    pub sessions_url: Option<Set<String>>,
    /// `sessions_schema`: the schema dsh's tables live in there.
    pub sessions_schema: Set<String>,
    pub model: Set<String>,
    pub base_url: Set<String>,
    /// The variable holding the key; empty when the server needs none.
    pub api_key_env: Set<String>,
    pub replay: Option<Set<String>>,
    pub reasoning: Set<Option<ReasoningEffort>>,
    /// The output limit sent with every request: the model's own when dsh knows it.
    pub max_tokens: Set<NonZeroU32>,
    pub temperature: Set<Option<f32>>,
    pub max_steps: Set<Option<NonZeroU32>>,
    /// Tool calls one step runs.
    pub max_tool_calls: Set<NonZeroU32>,
    /// `dsh run`'s permission mode.
    pub permission: Set<PermissionMode>,
    /// How long one `grep` or `glob` may search.
    pub search_timeout: Set<Duration>,
    /// The model's context window in tokens.
    pub context_window: Set<NonZeroU64>,
    /// The share of the window at which a session compacts; 0 never.
    pub compact_at: Set<f32>,
    /// Tokens of recent tool output requests keep whole; 0 keeps all.
    pub keep_tool_output: Set<u64>,
    pub connect_timeout: Set<Duration>,
    pub first_byte_timeout: Set<Duration>,
    pub idle_timeout: Set<Duration>,
    pub max_retries: Set<u32>,
    pub send_reasoning_content: Set<bool>,
    pub max_tokens_field: Set<MaxTokensField>,
    pub headers: Vec<(String, String)>,
    /// `[mcp_servers.<name>]` with the file that set each.
    pub mcp_servers: Vec<(mcp::McpServerEntry, PathBuf)>,
    /// `[permissions]`: the user's rules, as written.
    pub permissions: file::Permissions,
    /// `[sandbox] writable_roots`: written to by sandboxed commands besides the session's
    /// directories.
    pub writable_roots: Vec<PathBuf>,
    pub acp_permission: Set<PermissionMode>,
    /// The interactive terminal's permission mode.
    pub tui_permission: Set<PermissionMode>,
    /// `[sandbox] policy`: what commands may touch.
    pub sandbox: Set<String>,
    /// `[sandbox] network`: whether sandboxed commands may reach the network.
    pub sandbox_network: Set<bool>,
    /// `[subagents]`: how deep children nest (0: no `task` tool), how many of one agent run
    /// at once, and a child's step limit.
    pub subagent_depth: Set<u32>,
    pub subagent_running: Set<usize>,
    pub subagent_steps: Set<Option<NonZeroU32>>,
    pub acp_max_line_bytes: Set<usize>,
    pub acp_cancel_grace: Set<Duration>,
    pub acp_teardown_deadline: Set<Duration>,
    /// Absolute: a relative path is under the configuration file's directory when the file
    /// set it, else under the current directory.
    pub system_prompt_file: Option<Set<PathBuf>>,
    pub project_instructions: Set<bool>,
    /// The model's prices, when both `price.input` and `price.output` are set.
    pub prices: Option<dsh_llm::Prices>,
}

impl Settings {
    /// Flags over environment over the file over defaults.
    pub fn resolve(global: &Global, flags: CommandFlags) -> Result<Settings, Failure> {
        Settings::resolve_for(global, flags, &Remembered::default())
    }

    /// As [`Settings::resolve`] for a resumed session that `remembered` its server and
    /// model: those come after flags and the environment, before the file.
    pub fn resolve_for(
        global: &Global,
        flags: CommandFlags,
        remembered: &Remembered,
    ) -> Result<Settings, Failure> {
        let located = file::locate(global.config.as_deref());
        let loaded = match &located {
            Some((path, required)) => file::load(path, *required)?,
            None => None,
        };
        let config_file = located.map(|(path, _)| {
            let present = loaded.is_some();
            (path, present)
        });
        let mut resolved = Vec::with_capacity(KEYS.len());
        for key in KEYS {
            resolved.push(pick(key, global, flags, remembered, loaded.as_ref())?);
        }
        derive_defaults(&mut resolved)?;
        anchor_paths(&mut resolved);
        let typed = Typed {
            resolved: &resolved,
        };
        Ok(Settings {
            data_dir: typed.get(&DATA_DIR)?,
            sessions_url: sessions_url(typed.optional(&SESSIONS_URL)?)?,
            sessions_schema: typed.get(&SESSIONS_SCHEMA)?,
            model: typed.get(&MODEL)?,
            base_url: typed.get(&BASE_URL)?,
            api_key_env: typed.get(&API_KEY_ENV)?,
            replay: typed.optional(&REPLAY)?,
            reasoning: typed.get(&REASONING)?,
            max_tokens: typed.get(&MAX_TOKENS)?,
            temperature: typed.get_or_unset(&TEMPERATURE)?,
            max_steps: typed.get_or_unset(&MAX_STEPS)?,
            max_tool_calls: typed.get(&MAX_TOOL_CALLS)?,
            permission: typed.get(&PERMISSION)?,
            search_timeout: typed.get(&SEARCH_TIMEOUT)?,
            context_window: typed.get(&CONTEXT_WINDOW)?,
            compact_at: typed.get(&COMPACT_AT)?,
            keep_tool_output: typed.get(&KEEP_TOOL_OUTPUT)?,
            connect_timeout: typed.get(&CONNECT_TIMEOUT)?,
            first_byte_timeout: typed.get(&FIRST_BYTE_TIMEOUT)?,
            idle_timeout: typed.get(&IDLE_TIMEOUT)?,
            max_retries: typed.get(&MAX_RETRIES)?,
            send_reasoning_content: typed.get(&SEND_REASONING_CONTENT)?,
            max_tokens_field: typed.get(&MAX_TOKENS_FIELD)?,
            headers: loaded
                .as_ref()
                .map(|l| l.headers.clone())
                .unwrap_or_default(),
            mcp_servers: loaded
                .as_ref()
                .map(|l| {
                    l.mcp_servers
                        .iter()
                        .map(|entry| (entry.clone(), l.path.clone()))
                        .collect()
                })
                .unwrap_or_default(),
            permissions: loaded
                .as_ref()
                .map(|l| l.permissions.clone())
                .unwrap_or_default(),
            writable_roots: loaded
                .as_ref()
                .map(|l| l.writable_roots.clone())
                .unwrap_or_default(),
            acp_permission: typed.get(&ACP_PERMISSION)?,
            tui_permission: typed.get(&TUI_PERMISSION)?,
            sandbox: typed.get(&SANDBOX)?,
            sandbox_network: typed.get(&SANDBOX_NETWORK)?,
            subagent_depth: typed.get(&SUBAGENT_DEPTH)?,
            subagent_running: typed.get(&SUBAGENT_RUNNING)?,
            subagent_steps: typed.get_or_unset(&SUBAGENT_STEPS)?,
            acp_max_line_bytes: typed.get(&ACP_MAX_LINE_BYTES)?,
            acp_cancel_grace: typed.get(&ACP_CANCEL_GRACE)?,
            acp_teardown_deadline: typed.get(&ACP_TEARDOWN_DEADLINE)?,
            system_prompt_file: typed.optional(&SYSTEM_PROMPT_FILE)?,
            project_instructions: typed.get(&PROJECT_INSTRUCTIONS)?,
            prices: prices(&typed)?,
            config_file,
            resolved,
        })
    }

    /// The user's own instruction file, `$XDG_CONFIG_HOME/dsh/AGENTS.md`.
    pub fn user_instructions(&self) -> Option<PathBuf> {
        file::config_dir().map(|dir| dir.join("AGENTS.md"))
    }

    /// The user's own slash commands, `$XDG_CONFIG_HOME/dsh/commands/`.
    pub fn user_commands(&self) -> Option<PathBuf> {
        file::config_dir().map(|dir| dir.join("commands"))
    }

    /// The user's agent definitions: `agents/` in the configuration directory.
    pub fn user_agents(&self) -> Option<PathBuf> {
        file::config_dir().map(|dir| dir.join("agents"))
    }

    /// `<data_dir>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.value.join("sessions")
    }
}

/// The strongest source of `key`, checked against its kind.
fn pick(
    key: &'static Key,
    global: &Global,
    flags: CommandFlags,
    remembered: &Remembered,
    loaded: Option<&file::Loaded>,
) -> Result<Resolved, Failure> {
    let set = |text: String, source: Source| Resolved {
        key,
        text: Some(text),
        source,
    };
    if let Some(flag) = key.flag
        && let Some(text) = (flag.text)(global, flags)?
    {
        let name = flag.name;
        key.kind
            .check(&text)
            .map_err(|want| Failure::config(format!("{name} {text:?}: expected {want}")))?;
        return Ok(set(text, Source::Flag(name)));
    }
    if let Some(name) = key.env {
        let text = match std::env::var(name) {
            Ok(text) if text.is_empty() && !matches!(key.kind, Kind::Text { empty_ok: true }) => {
                None
            }
            Ok(text) => Some(text),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(Failure::config(format!(
                    "environment variable {name}: not UTF-8"
                )));
            }
        };
        if let Some(text) = text {
            key.kind.check(&text).map_err(|want| {
                Failure::config(format!(
                    "environment variable {name}={text:?}: expected {want}"
                ))
            })?;
            return Ok(set(text, Source::Env(name)));
        }
    }
    let kept = if key.name == BASE_URL.key.name {
        remembered.base_url.as_ref()
    } else if key.name == MODEL.key.name {
        remembered.model.as_ref()
    } else {
        None
    };
    if let Some(text) = kept.filter(|t| key.kind.check(t).is_ok() && !t.is_empty()) {
        return Ok(set(text.clone(), Source::Session));
    }
    if let Some(loaded) = loaded
        && let Some(value) = loaded.values.get(key.name)
    {
        let source = Source::File {
            path: loaded.path.clone(),
            line: value.line,
        };
        return Ok(set(value.text.clone(), source));
    }
    Ok(Resolved {
        key,
        text: match key.default {
            table::Default::Is(text) => Some(text.to_owned()),
            table::Default::Unset | table::Default::Derived(_) => None,
        },
        source: Source::Default,
    })
}

/// The defaults that depend on the environment or on other settings.
fn derive_defaults(resolved: &mut [Resolved]) -> Result<(), Failure> {
    let text = |setting: &Key| {
        resolved
            .iter()
            .find(|r| r.key.name == setting.name)
            .and_then(|r| r.text.clone())
            .unwrap_or_default()
    };
    let (base_url, model) = (text(&BASE_URL.key), text(&MODEL.key));
    let known = Known {
        base_url: &base_url,
        model: &model,
    };
    for r in resolved.iter_mut() {
        if let (None, table::Default::Derived(derive)) = (&r.text, r.key.default) {
            r.text = Some(derive(&known)?);
        }
    }
    Ok(())
}

/// Reads resolved texts into typed values.
struct Typed<'a> {
    resolved: &'a [Resolved],
}

impl Typed<'_> {
    fn optional<T>(&self, setting: &Setting<T>) -> Result<Option<Set<T>>, Failure> {
        let name = setting.key.name;
        let r = self
            .resolved
            .iter()
            .find(|r| r.key.name == name)
            .ok_or_else(|| Failure::internal(format!("no setting {name} in the table")))?;
        match &r.text {
            None => Ok(None),
            Some(text) => match (setting.read)(text) {
                Some(value) => Ok(Some(Set {
                    value,
                    source: r.source.clone(),
                })),
                // The text was checked against its kind: a reader refusing it is a bug here.
                None => Err(Failure::internal(format!(
                    "{name} = {text:?} passed its check but could not be read"
                ))),
            },
        }
    }

    fn get_or_unset<T>(&self, setting: &Setting<T>) -> Result<Set<Option<T>>, Failure> {
        Ok(match self.optional(setting)? {
            Some(set) => Set {
                value: Some(set.value),
                source: set.source,
            },
            None => Set {
                value: None,
                source: Source::Default,
            },
        })
    }

    fn get<T>(&self, setting: &Setting<T>) -> Result<Set<T>, Failure> {
        let name = setting.key.name;
        self.optional(setting)?
            .ok_or_else(|| Failure::internal(format!("{name} has no value and no default")))
    }
}

/// The prices, when the input and output prices are both set; one without the other is a
/// mistake worth an error rather than costs that are silently wrong.
fn prices(typed: &Typed<'_>) -> Result<Option<dsh_llm::Prices>, Failure> {
    let input = typed.optional(&PRICE_INPUT)?;
    let output = typed.optional(&PRICE_OUTPUT)?;
    let cached = typed.optional(&PRICE_CACHED_INPUT)?;
    let currency = typed.get(&PRICE_CURRENCY)?;
    match (input, output) {
        (Some(input), Some(output)) => Ok(Some(dsh_llm::Prices {
            input: input.value,
            cached_input: cached.map(|c| c.value),
            output: output.value,
            currency: currency.value,
        })),
        (None, None) if cached.is_none() => Ok(None),
        (_, _) => Err(Failure::config(
            "price.input and price.output are needed together (price.cached_input is optional)",
        )),
    }
}

/// File settings made absolute against where they were written — the configuration file's
/// directory for a file setting, the current directory for a flag or a variable — so that
/// what runs and what `dsh config` shows are the same path.
fn anchor_paths(resolved: &mut [Resolved]) {
    for r in resolved
        .iter_mut()
        .filter(|r| r.key.name == SYSTEM_PROMPT_FILE.key.name)
    {
        let Some(text) = &r.text else { continue };
        if Path::new(text).is_absolute() {
            continue;
        }
        let base = match &r.source {
            Source::File { path, .. } => path.parent().map(Path::to_path_buf),
            Source::Default | Source::Env(_) | Source::Flag(_) | Source::Session => {
                std::env::current_dir().ok()
            }
        };
        if let Some(base) = base {
            r.text = Some(base.join(text).display().to_string());
        }
    }
}

/// `sessions_url` as given; one from the configuration file may not hold a password (a file
/// is copied, shared and committed): that belongs in the environment or `~/.pgpass`.
fn sessions_url(url: Option<Set<String>>) -> Result<Option<Set<String>>, Failure> {
    let Some(url) = url else {
        return Ok(None);
    };
    let (_, password) =
        dsh_session_postgres::describe(&url.value).map_err(|e| Failure::config(e.to_string()))?;
    if password && matches!(url.source, Source::File { .. }) {
        return Err(Failure::config(format!(
            "sessions_url ({}) holds a password; a configuration file must not: put it in \
             PGPASSWORD or ~/.pgpass (or the whole URL in DSH_SESSIONS_URL)",
            url.source
        )));
    }
    Ok(Some(url))
}

pub(crate) fn default_data_dir() -> Result<PathBuf, Failure> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match var("XDG_DATA_HOME") {
        Some(xdg) if Path::new(&xdg).is_absolute() => Ok(PathBuf::from(xdg).join("dsh")),
        _ => match var("HOME") {
            Some(home) => Ok(PathBuf::from(home).join(".local/share/dsh")),
            None => Err(Failure::config(
                "no data directory: HOME is not set; pass --data-dir or set DSH_DATA_DIR",
            )),
        },
    }
}

/// Whether `url`'s host is DeepSeek's API.
pub fn is_deepseek(url: &str) -> bool {
    url::Url::parse(url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.eq_ignore_ascii_case("api.deepseek.com"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;

    /// The table names flags and derived defaults by text; each must be one this module
    /// answers, or resolution would fail as an internal error for every user.
    #[test]
    fn every_flag_and_derived_default_the_table_names_is_answered() {
        let cli = Cli::parse_from([
            "dsh",
            "--model",
            "m",
            "--base-url",
            "http://h/v1",
            "--reasoning",
            "low",
            "--max-tokens",
            "7",
            "--temperature",
            "0.2",
            "--context-window",
            "50000",
            "--replay",
            "demo",
            "--data-dir",
            "/d",
            "--system-prompt-file",
            "p.md",
            "--no-project-instructions",
            "--sandbox",
            "read-only",
            "config",
        ]);
        let flags = CommandFlags {
            max_steps: Some(3),
            acp_permission: Some(PermissionMode::Allow),
            run_permission: Some(PermissionMode::Ask),
            tui_permission: Some(PermissionMode::AcceptEdits),
        };
        for key in KEYS {
            if let Some(flag) = key.flag {
                let text = (flag.text)(&cli.global, flags).unwrap();
                let name = flag.name;
                let text = text.unwrap_or_else(|| panic!("{name} was given"));
                assert_eq!(key.kind.check(&text), Ok(()), "{name} {text:?}");
            }
        }
        let mut resolved: Vec<Resolved> = KEYS
            .iter()
            .map(|key| Resolved {
                key,
                text: None,
                source: Source::Default,
            })
            .collect();
        derive_defaults(&mut resolved).unwrap();
        for r in &resolved {
            if matches!(r.key.default, table::Default::Derived(_)) {
                assert!(r.text.is_some(), "{} has a derived default", r.key.name);
            }
        }
    }
}
