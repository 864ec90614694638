//! Every setting dsh reads, in one table: its name (also its key in the configuration file,
//! dotted for a table: `http.max_retries` is `max_retries` under `[http]`), its flag and how
//! the parsed command line gives it, its environment variable, what its text may be, its
//! default, and how its text becomes a typed value. Resolution and `dsh config` both iterate
//! this table, so a setting added here is read, checked and shown everywhere; code names a
//! setting by its constant.

use std::num::{NonZeroU32, NonZeroU64};
use std::path::PathBuf;
use std::time::Duration;

use dsh_llm::ReasoningEffort;
use dsh_llm_openai::MaxTokensField;
use dsh_tools::PermissionMode;

use super::CommandFlags;
use super::flags;
use crate::args::Global;
use crate::exit::Failure;

/// What a setting's text may be; also the TOML type the file must give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Any text (a TOML string); empty text means unset unless `empty_ok`.
    Text { empty_ok: bool },
    /// A whole number in `min..=max` (a TOML integer).
    Int { min: u64, max: u64 },
    /// A number in `min..=max` (a TOML float or integer).
    Float { min: f64, max: f64 },
    /// `true` or `false` (a TOML boolean).
    Bool,
    /// One of these words (a TOML string).
    Choice(&'static [&'static str]),
}

/// What a setting is when nothing sets it.
#[derive(Clone, Copy, Debug)]
pub enum Default {
    /// This text, read as the setting's kind.
    Is(&'static str),
    /// Nothing: the setting is optional.
    Unset,
    /// Worked out when everything else is known (the data directory from `XDG_DATA_HOME` or
    /// `HOME`; the key's variable from the server's host).
    Derived(Derive),
}

/// What a derived default may look at: the server and the model as resolved.
pub struct Known<'a> {
    pub base_url: &'a str,
    pub model: &'a str,
}

/// How a derived default is worked out.
pub type Derive = fn(&Known<'_>) -> Result<String, Failure>;

/// A command-line flag that sets a setting, and how its text is read from the parsed line.
#[derive(Clone, Copy, Debug)]
pub struct Flag {
    pub name: &'static str,
    pub text: fn(&Global, CommandFlags) -> Result<Option<String>, Failure>,
}

/// One setting, as resolution and `dsh config` see it.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub name: &'static str,
    pub flag: Option<Flag>,
    pub env: Option<&'static str>,
    /// Whether the configuration file may set it.
    pub in_file: bool,
    pub kind: Kind,
    pub default: Default,
}

/// A setting and how its checked text becomes its typed value. Code names a setting by its
/// constant, so a misspelt setting does not compile.
pub struct Setting<T: 'static> {
    pub key: Key,
    pub read: fn(&str) -> Option<T>,
}

/// DeepSeek, the default server.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";

const fn key(name: &'static str, kind: Kind, default: Default) -> Key {
    Key {
        name,
        flag: None,
        env: None,
        in_file: true,
        kind,
        default,
    }
}

const fn flag(
    mut key: Key,
    name: &'static str,
    text: fn(&Global, CommandFlags) -> Result<Option<String>, Failure>,
) -> Key {
    key.flag = Some(Flag { name, text });
    key
}

const fn env(mut key: Key, env: &'static str) -> Key {
    key.env = Some(env);
    key
}

const fn not_in_file(mut key: Key) -> Key {
    key.in_file = false;
    key
}

const fn setting<T>(key: Key, read: fn(&str) -> Option<T>) -> Setting<T> {
    Setting { key, read }
}

const TEXT: Kind = Kind::Text { empty_ok: false };
const LEVELS: &[&str] = &["default", "off", "low", "medium", "high", "max"];
const PERMISSIONS: &[&str] = &["ask", "accept-edits", "allow"];
const SANDBOXES: &[&str] = &["read-only", "workspace-write", "full-access"];
const PRICE: Kind = Kind::Float {
    min: 0.0,
    max: 1_000_000.0,
};
const SECS: Kind = Kind::Int { min: 1, max: 3600 };
const MILLIS: Kind = Kind::Int {
    min: 1,
    max: 600_000,
};

// One row a setting: kept on one line each (not as rustfmt would spread them), so the
// table reads as a table.
#[rustfmt::skip]
mod rows {
    use super::*;
    use super::read::*;
    use super::flags as f;
    use super::derive as d;

    pub const MODEL: Setting<String> = setting(env(flag(key("model", TEXT, Default::Is("deepseek-flash")), "--model", f::model), "DSH_MODEL"), text);
    pub const BASE_URL: Setting<String> = setting(env(flag(key("base_url", TEXT, Default::Is(DEEPSEEK_URL)), "--base-url", f::base_url), "DSH_BASE_URL"), text);
    // `""` declares a server that needs no key, so empty text is a value here.
    pub const API_KEY_ENV: Setting<String> = setting(env(key("api_key_env", Kind::Text { empty_ok: true }, Default::Derived(d::api_key_env)), "DSH_API_KEY_ENV"), text);
    pub const REASONING: Setting<Option<ReasoningEffort>> = setting(env(flag(key("reasoning", Kind::Choice(LEVELS), Default::Is("default")), "--reasoning", f::reasoning), "DSH_REASONING"), effort);
    pub const MAX_TOKENS: Setting<NonZeroU32> = setting(env(flag(key("max_tokens", Kind::Int { min: 1, max: u32::MAX as u64 }, Default::Derived(d::max_tokens)), "--max-tokens", f::max_tokens), "DSH_MAX_TOKENS"), parsed);
    pub const TEMPERATURE: Setting<f32> = setting(env(flag(key("temperature", Kind::Float { min: 0.0, max: 2.0 }, Default::Unset), "--temperature", f::temperature), "DSH_TEMPERATURE"), parsed);
    pub const MAX_STEPS: Setting<NonZeroU32> = setting(env(flag(key("max_steps", Kind::Int { min: 1, max: 10_000 }, Default::Unset), "--max-steps", f::max_steps), "DSH_MAX_STEPS"), parsed);
    pub const MAX_TOOL_CALLS: Setting<NonZeroU32> = setting(env(key("max_tool_calls", Kind::Int { min: 1, max: 1000 }, Default::Is("16")), "DSH_MAX_TOOL_CALLS"), parsed);
    pub const PERMISSION: Setting<PermissionMode> = setting(env(flag(key("permission", Kind::Choice(PERMISSIONS), Default::Is("allow")), "--permission", f::run_permission), "DSH_PERMISSION"), parsed);
    pub const SEARCH_TIMEOUT: Setting<Duration> = setting(env(key("search_timeout_secs", SECS, Default::Is("30")), "DSH_SEARCH_TIMEOUT_SECS"), secs);
    pub const COMPACT_AT: Setting<f32> = setting(env(key("compact_at", Kind::Float { min: 0.0, max: 1.0 }, Default::Is("0.8")), "DSH_COMPACT_AT"), parsed);
    pub const KEEP_TOOL_OUTPUT: Setting<u64> = setting(env(key("keep_tool_output", Kind::Int { min: 0, max: 100_000_000 }, Default::Is("40000")), "DSH_KEEP_TOOL_OUTPUT"), parsed);
    pub const CONTEXT_WINDOW: Setting<NonZeroU64> = setting(env(flag(key("context_window", Kind::Int { min: 1024, max: 100_000_000 }, Default::Derived(d::context_window)), "--context-window", f::context_window), "DSH_CONTEXT_WINDOW"), parsed);
    pub const DATA_DIR: Setting<PathBuf> = setting(env(flag(key("data_dir", TEXT, Default::Derived(d::data_dir)), "--data-dir", f::data_dir), "DSH_DATA_DIR"), path);
    pub const SESSIONS_URL: Setting<String> = setting(env(key("sessions_url", TEXT, Default::Unset), "DSH_SESSIONS_URL"), text);
    pub const SESSIONS_SCHEMA: Setting<String> = setting(env(key("sessions_schema", TEXT, Default::Is("dsh")), "DSH_SESSIONS_SCHEMA"), text);
    pub const REPLAY: Setting<String> = setting(not_in_file(env(flag(key("replay", TEXT, Default::Unset), "--replay", f::replay), "DSH_REPLAY")), text);
    pub const SYSTEM_PROMPT_FILE: Setting<PathBuf> = setting(env(flag(key("system_prompt_file", TEXT, Default::Unset), "--system-prompt-file", f::system_prompt_file), "DSH_SYSTEM_PROMPT_FILE"), path);
    pub const PROJECT_INSTRUCTIONS: Setting<bool> = setting(env(flag(key("project_instructions", Kind::Bool, Default::Is("true")), "--no-project-instructions", f::project_instructions), "DSH_PROJECT_INSTRUCTIONS"), parsed);
    pub const PRICE_INPUT: Setting<f64> = setting(env(key("price.input", PRICE, Default::Unset), "DSH_PRICE_INPUT"), parsed);
    pub const PRICE_CACHED_INPUT: Setting<f64> = setting(env(key("price.cached_input", PRICE, Default::Unset), "DSH_PRICE_CACHED_INPUT"), parsed);
    pub const PRICE_OUTPUT: Setting<f64> = setting(env(key("price.output", PRICE, Default::Unset), "DSH_PRICE_OUTPUT"), parsed);
    pub const PRICE_CURRENCY: Setting<String> = setting(env(key("price.currency", TEXT, Default::Is("USD")), "DSH_PRICE_CURRENCY"), text);
    pub const CONNECT_TIMEOUT: Setting<Duration> = setting(key("http.connect_timeout_secs", SECS, Default::Is("10")), secs);
    pub const FIRST_BYTE_TIMEOUT: Setting<Duration> = setting(key("http.first_byte_timeout_secs", SECS, Default::Is("300")), secs);
    pub const IDLE_TIMEOUT: Setting<Duration> = setting(key("http.idle_timeout_secs", SECS, Default::Is("120")), secs);
    pub const MAX_RETRIES: Setting<u32> = setting(key("http.max_retries", Kind::Int { min: 0, max: 10 }, Default::Is("4")), parsed);
    pub const SEND_REASONING_CONTENT: Setting<bool> = setting(key("http.send_reasoning_content", Kind::Bool, Default::Derived(d::send_reasoning_content)), parsed);
    pub const MAX_TOKENS_FIELD: Setting<MaxTokensField> = setting(key("http.max_tokens_field", Kind::Choice(&["max_tokens", "max_completion_tokens"]), Default::Is("max_tokens")), max_tokens_field);
    pub const ACP_PERMISSION: Setting<PermissionMode> = setting(flag(key("acp.permission", Kind::Choice(PERMISSIONS), Default::Is("ask")), "--permission", f::acp_permission), parsed);
    pub const SANDBOX: Setting<String> = setting(env(flag(key("sandbox.policy", Kind::Choice(SANDBOXES), Default::Is("workspace-write")), "--sandbox", f::sandbox), "DSH_SANDBOX"), text);
    pub const SANDBOX_NETWORK: Setting<bool> = setting(env(key("sandbox.network", Kind::Bool, Default::Is("false")), "DSH_SANDBOX_NETWORK"), parsed);
    pub const SUBAGENT_DEPTH: Setting<u32> = setting(env(key("subagents.max_depth", Kind::Int { min: 0, max: 8 }, Default::Is("1")), "DSH_SUBAGENT_DEPTH"), parsed);
    pub const SUBAGENT_RUNNING: Setting<usize> = setting(env(key("subagents.max_running", Kind::Int { min: 1, max: 64 }, Default::Is("4")), "DSH_SUBAGENT_RUNNING"), parsed);
    pub const SUBAGENT_STEPS: Setting<NonZeroU32> = setting(env(key("subagents.max_steps", Kind::Int { min: 1, max: 10_000 }, Default::Unset), "DSH_SUBAGENT_STEPS"), parsed);
    pub const TUI_PERMISSION: Setting<PermissionMode> = setting(flag(key("tui.permission", Kind::Choice(PERMISSIONS), Default::Is("accept-edits")), "--permission", f::tui_permission), parsed);
    pub const ACP_MAX_LINE_BYTES: Setting<usize> = setting(key("acp.max_line_bytes", Kind::Int { min: 1024, max: 1 << 30 }, Default::Is("33554432")), parsed);
    pub const ACP_CANCEL_GRACE: Setting<Duration> = setting(key("acp.cancel_grace_ms", MILLIS, Default::Is("5000")), millis);
    pub const ACP_TEARDOWN_DEADLINE: Setting<Duration> = setting(key("acp.teardown_deadline_ms", MILLIS, Default::Is("10000")), millis);

    /// Every setting, in the order `dsh config` shows them.
    pub const KEYS: &[Key] = &[
        MODEL.key, BASE_URL.key, API_KEY_ENV.key, REASONING.key, MAX_TOKENS.key, TEMPERATURE.key,
        MAX_STEPS.key, MAX_TOOL_CALLS.key, PERMISSION.key, SEARCH_TIMEOUT.key, COMPACT_AT.key,
        KEEP_TOOL_OUTPUT.key, CONTEXT_WINDOW.key, DATA_DIR.key, SESSIONS_URL.key,
        SESSIONS_SCHEMA.key, REPLAY.key, SYSTEM_PROMPT_FILE.key,
        PROJECT_INSTRUCTIONS.key, PRICE_INPUT.key, PRICE_CACHED_INPUT.key, PRICE_OUTPUT.key,
        PRICE_CURRENCY.key, CONNECT_TIMEOUT.key, FIRST_BYTE_TIMEOUT.key, IDLE_TIMEOUT.key,
        MAX_RETRIES.key, SEND_REASONING_CONTENT.key, MAX_TOKENS_FIELD.key, ACP_PERMISSION.key,
        ACP_MAX_LINE_BYTES.key, ACP_CANCEL_GRACE.key, ACP_TEARDOWN_DEADLINE.key, TUI_PERMISSION.key,
        SANDBOX.key, SANDBOX_NETWORK.key, SUBAGENT_DEPTH.key, SUBAGENT_RUNNING.key,
        SUBAGENT_STEPS.key,
    ];
}

pub use rows::*;

/// How checked texts become values.
mod read {
    use std::path::PathBuf;
    use std::str::FromStr;
    use std::time::Duration;

    use dsh_llm::ReasoningEffort;
    use dsh_llm_openai::MaxTokensField;

    pub fn text(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    pub fn path(text: &str) -> Option<PathBuf> {
        Some(PathBuf::from(text))
    }

    pub fn parsed<T: FromStr>(text: &str) -> Option<T> {
        text.parse().ok()
    }

    pub fn secs(text: &str) -> Option<Duration> {
        text.parse().ok().map(Duration::from_secs)
    }

    pub fn millis(text: &str) -> Option<Duration> {
        text.parse().ok().map(Duration::from_millis)
    }

    pub fn effort(level: &str) -> Option<Option<ReasoningEffort>> {
        Some(ReasoningEffort::parse(level))
    }

    pub fn max_tokens_field(text: &str) -> Option<MaxTokensField> {
        match text {
            "max_tokens" => Some(MaxTokensField::MaxTokens),
            "max_completion_tokens" => Some(MaxTokensField::MaxCompletionTokens),
            _ => None,
        }
    }
}

/// How derived defaults are worked out.
mod derive {
    use super::Known;
    use crate::exit::Failure;
    use crate::settings::{default_data_dir, is_deepseek};

    pub fn data_dir(_: &Known<'_>) -> Result<String, Failure> {
        Ok(default_data_dir()?.display().to_string())
    }

    /// A DeepSeek key is only ever sent to DeepSeek.
    pub fn api_key_env(known: &Known<'_>) -> Result<String, Failure> {
        Ok(match is_deepseek(known.base_url) {
            true => "DEEPSEEK_API_KEY",
            false => "DSH_API_KEY",
        }
        .to_owned())
    }

    pub fn context_window(known: &Known<'_>) -> Result<String, Failure> {
        Ok(crate::window::default_window(known.model).to_string())
    }

    pub fn max_tokens(known: &Known<'_>) -> Result<String, Failure> {
        Ok(crate::window::default_max_tokens(known.model).to_string())
    }

    /// The field DeepSeek's thinking mode needs; another server may refuse it.
    pub fn send_reasoning_content(known: &Known<'_>) -> Result<String, Failure> {
        Ok(is_deepseek(known.base_url).to_string())
    }
}

/// The file tables a setting may sit in, besides the top level; `[http.headers]` holds
/// free-form header names. `[price]` gives the model's prices per million tokens, for costs.
pub const TABLES: &[&str] = &["http", "acp", "price", "tui", "sandbox", "subagents"];

impl Kind {
    /// Checks `text` against the kind; `Err` says what was expected, as a phrase that reads
    /// after "expected" and after "<name> must be".
    pub fn check(self, text: &str) -> Result<(), String> {
        let ok = match self {
            Kind::Text { .. } => true,
            Kind::Int { min, max } => text.parse::<u64>().is_ok_and(|n| (min..=max).contains(&n)),
            Kind::Float { min, max } => text
                .parse::<f64>()
                .is_ok_and(|n| n.is_finite() && (min..=max).contains(&n)),
            Kind::Bool => matches!(text, "true" | "false"),
            Kind::Choice(words) => words.contains(&text),
        };
        if ok { Ok(()) } else { Err(self.expected()) }
    }

    /// What the kind accepts, in words.
    pub fn expected(self) -> String {
        match self {
            Kind::Text { .. } => "text".to_owned(),
            Kind::Int { min, max } if max == u64::from(u32::MAX) => {
                format!("a whole number of at least {min}")
            }
            Kind::Int { min, max } => format!("{min} to {max}"),
            Kind::Float { min, max } => format!("a number from {min} to {max}"),
            Kind::Bool => "true or false".to_owned(),
            Kind::Choice(words) => match words.split_last() {
                Some((last, [])) => format!("\"{last}\""),
                Some((last, rest)) => format!(
                    "{} or \"{last}\"",
                    rest.iter()
                        .map(|w| format!("\"{w}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => "nothing".to_owned(),
            },
        }
    }

    /// The value as JSON, for `dsh config --json` (checked text only).
    pub fn json(self, text: &str) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Kind::Int { .. } => text.parse::<u64>().map(Value::from).unwrap_or(Value::Null),
            Kind::Float { .. } => text.parse::<f64>().map(Value::from).unwrap_or(Value::Null),
            Kind::Bool => Value::Bool(text == "true"),
            Kind::Text { .. } | Kind::Choice(_) => Value::from(text),
        }
    }
}

/// The setting named `name`.
pub fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_flags_and_variables_are_unique_and_every_file_key_has_a_known_table() {
        let mut names = std::collections::HashSet::new();
        let mut envs = std::collections::HashSet::new();
        for key in KEYS {
            assert!(names.insert(key.name), "{} twice", key.name);
            if let Some(env) = key.env {
                assert!(envs.insert(env), "{env} twice");
            }
            if let Some((table, _)) = key.name.split_once('.') {
                assert!(TABLES.contains(&table), "{}", key.name);
            }
            if let Default::Is(text) = key.default {
                assert_eq!(key.kind.check(text), Ok(()), "the default of {}", key.name);
            }
        }
    }

    #[test]
    fn each_kind_accepts_what_it_says_and_names_what_it_expects() {
        let cases: &[(Kind, &str, bool)] = &[
            (Kind::Int { min: 1, max: 3 }, "3", true),
            (Kind::Int { min: 1, max: 3 }, "0", false),
            (Kind::Int { min: 1, max: 3 }, "-1", false),
            (Kind::Int { min: 1, max: 3 }, "2.0", false),
            (Kind::Float { min: 0.0, max: 2.0 }, "1.5", true),
            (Kind::Float { min: 0.0, max: 2.0 }, "NaN", false),
            (Kind::Float { min: 0.0, max: 2.0 }, "9", false),
            (Kind::Bool, "true", true),
            (Kind::Bool, "yes", false),
            (Kind::Choice(&["ask", "allow"]), "allow", true),
            (Kind::Choice(&["ask", "allow"]), "Allow", false),
            (TEXT, "", true),
        ];
        for (kind, text, ok) in cases {
            assert_eq!(kind.check(text).is_ok(), *ok, "{kind:?} {text:?}");
        }
        assert_eq!(Kind::Int { min: 0, max: 10 }.expected(), "0 to 10");
        assert_eq!(
            Kind::Choice(&["ask", "allow"]).expected(),
            "\"ask\" or \"allow\""
        );
        assert_eq!(
            Kind::Choice(&["a", "b", "c"]).expected(),
            "\"a\", \"b\" or \"c\""
        );
        assert_eq!(
            find("max_tokens").map(|k| k.kind.expected()).as_deref(),
            Some("a whole number of at least 1")
        );
    }
}
