//! The effective configuration, computed once for every command: each value from its flag,
//! else its environment variable, else the configuration file, else its default — and each
//! remembers which of those it came from, for `dsh config`.

use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::args::{Global, Reasoning};
use crate::exit::Failure;
use crate::file::{self, Loaded};

/// DeepSeek, the default server.
pub const DEEPSEEK_URL: &str = "https://api.deepseek.com";
/// The default model.
pub const DEFAULT_MODEL: &str = "deepseek-flash";

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File { path: PathBuf, line: usize },
    Env(&'static str),
    Flag(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "file {}:{line}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// A value and its source.
#[derive(Clone, Debug)]
pub struct Set<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Set<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Set<U> {
        Set {
            value: f(self.value),
            source: self.source,
        }
    }
}

/// A value that may be unset: its source is the default when nothing set it.
trait OrUnset<T> {
    fn or_unset(self) -> Set<Option<T>>;
}

impl<T> OrUnset<T> for Option<Set<T>> {
    fn or_unset(self) -> Set<Option<T>> {
        self.map_or_else(|| default(None), |s| s.map(Some))
    }
}

/// What every command runs with.
#[derive(Debug)]
pub struct Settings {
    /// The file read, and whether it was there.
    pub config_file: Option<(PathBuf, bool)>,
    pub data_dir: Set<PathBuf>,
    pub model: Set<String>,
    pub base_url: Set<String>,
    /// The variable holding the key; empty when the server needs none.
    pub api_key_env: Set<String>,
    pub replay: Option<Set<String>>,
    pub reasoning: Set<Option<dsh_llm::ReasoningEffort>>,
    pub max_tokens: Set<Option<NonZeroU32>>,
    pub temperature: Set<Option<f32>>,
    pub max_steps: Set<Option<u32>>,
    pub connect_timeout_secs: Set<u64>,
    pub idle_timeout_secs: Set<u64>,
    pub max_retries: Set<u32>,
    pub send_reasoning_content: Set<bool>,
    pub max_tokens_field: Set<String>,
    pub headers: Vec<(String, String)>,
    /// `[acp]`: `ask` or `allow` (`dsh acp --permission` overrides it).
    pub acp_permission: Set<String>,
    pub acp_max_line_bytes: Set<u64>,
    pub acp_cancel_grace_ms: Set<u64>,
    pub acp_teardown_deadline_ms: Set<u64>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bad_env(name: &str, value: &str, want: &str) -> Failure {
    Failure::config(format!("environment variable {name}={value:?}: {want}"))
}

fn effort(level: Reasoning) -> Option<dsh_llm::ReasoningEffort> {
    use dsh_llm::ReasoningEffort as E;
    match level {
        Reasoning::Default => None,
        Reasoning::Off => Some(E::Off),
        Reasoning::Low => Some(E::Low),
        Reasoning::Medium => Some(E::Medium),
        Reasoning::High => Some(E::High),
        Reasoning::Max => Some(E::Max),
    }
}

fn parse_level(text: &str) -> Option<Reasoning> {
    <Reasoning as clap::ValueEnum>::from_str(text, true).ok()
}

/// Picks flag, then env (parsed), then file, then default.
struct Pick<'a> {
    file: Option<&'a Loaded>,
}

impl Pick<'_> {
    fn in_file<T: Clone>(&self, value: Option<&Spanned<T>>) -> Option<Set<T>> {
        let (file, value) = (self.file?, value?);
        Some(Set {
            value: value.get_ref().clone(),
            source: Source::File {
                path: file.path.clone(),
                line: file.line(value),
            },
        })
    }
}

fn flag<T>(value: Option<T>, name: &'static str) -> Option<Set<T>> {
    value.map(|value| Set {
        value,
        source: Source::Flag(name),
    })
}

fn from_env<T>(
    name: &'static str,
    parse: impl Fn(&str) -> Option<T>,
    want: &str,
) -> Result<Option<Set<T>>, Failure> {
    match env(name) {
        None => Ok(None),
        Some(text) => match parse(&text) {
            Some(value) => Ok(Some(Set {
                value,
                source: Source::Env(name),
            })),
            None => Err(bad_env(name, &text, want)),
        },
    }
}

fn default<T>(value: T) -> Set<T> {
    Set {
        value,
        source: Source::Default,
    }
}

impl Settings {
    /// Flags over environment over the file over defaults.
    pub fn resolve(global: &Global, max_steps_flag: Option<u32>) -> Result<Settings, Failure> {
        let located = file::locate(global.config.as_deref());
        let loaded = match &located {
            Some((path, required)) => file::load(path, *required)?,
            None => None,
        };
        let config_file = located.map(|(path, _)| {
            let present = loaded.is_some();
            (path, present)
        });
        let pick = Pick {
            file: loaded.as_ref(),
        };
        let f = loaded.as_ref().map(|l| &l.file);

        let data_dir = match flag(global.data_dir.clone(), "--data-dir")
            .or(from_env(
                "DSH_DATA_DIR",
                |v| Some(PathBuf::from(v)),
                "a directory",
            )?)
            .or_else(|| {
                pick.in_file(f.and_then(|f| f.data_dir.as_ref()))
                    .map(|s| Set {
                        value: PathBuf::from(s.value),
                        source: s.source,
                    })
            }) {
            Some(dir) => dir,
            None => default(default_data_dir()?),
        };
        let model = flag(global.model.clone(), "--model")
            .or(from_env(
                "DSH_MODEL",
                |v| Some(v.to_owned()),
                "a model name",
            )?)
            .or_else(|| pick.in_file(f.and_then(|f| f.model.as_ref())))
            .unwrap_or_else(|| default(DEFAULT_MODEL.to_owned()));
        let base_url = flag(global.base_url.clone(), "--base-url")
            .or(from_env("DSH_BASE_URL", |v| Some(v.to_owned()), "a URL")?)
            .or_else(|| pick.in_file(f.and_then(|f| f.base_url.as_ref())))
            .unwrap_or_else(|| default(DEEPSEEK_URL.to_owned()));
        // A DeepSeek key is only ever sent to DeepSeek; `""` means the server needs no key.
        let api_key_env = match std::env::var("DSH_API_KEY_ENV") {
            Ok(name) => Set {
                value: name,
                source: Source::Env("DSH_API_KEY_ENV"),
            },
            Err(_) => pick
                .in_file(f.and_then(|f| f.api_key_env.as_ref()))
                .unwrap_or_else(|| {
                    default(if is_deepseek(&base_url.value) {
                        "DEEPSEEK_API_KEY".to_owned()
                    } else {
                        "DSH_API_KEY".to_owned()
                    })
                }),
        };
        let reasoning = match flag(global.reasoning, "--reasoning") {
            Some(set) => Set {
                value: effort(set.value),
                source: set.source,
            },
            None => match from_env(
                "DSH_REASONING",
                parse_level,
                "expected default, off, low, medium, high or max",
            )? {
                Some(set) => Set {
                    value: effort(set.value),
                    source: set.source,
                },
                None => match pick.in_file(f.and_then(|f| f.reasoning.as_ref())) {
                    Some(set) => Set {
                        value: parse_level(&set.value).and_then(effort),
                        source: set.source,
                    },
                    None => default(None),
                },
            },
        };
        let max_tokens = flag(global.max_tokens, "--max-tokens")
            .or(from_env(
                "DSH_MAX_TOKENS",
                |v| v.parse::<NonZeroU32>().ok(),
                "expected a positive whole number",
            )?)
            .or_else(|| {
                pick.in_file(f.and_then(|f| f.max_tokens.as_ref()))
                    .and_then(|s| NonZeroU32::new(s.value).map(|n| s.map(|_| n)))
            })
            .or_unset();
        let temperature = from_env(
            "DSH_TEMPERATURE",
            |v| v.parse::<f32>().ok().filter(|t| (0.0..=2.0).contains(t)),
            "expected a number from 0 to 2",
        )?
        .or_else(|| {
            pick.in_file(f.and_then(|f| f.temperature.as_ref()))
                .map(|s| s.map(|t| t as f32))
        })
        .or_unset();
        let max_steps = flag(max_steps_flag, "--max-steps")
            .or(from_env(
                "DSH_MAX_STEPS",
                |v| v.parse::<u32>().ok().filter(|n| (1..=10_000).contains(n)),
                "expected 1 to 10000",
            )?)
            .or_else(|| pick.in_file(f.and_then(|f| f.max_steps.as_ref())))
            .or_unset();
        let http = f.map(|f| &f.http);
        let acp = f.map(|f| &f.acp);
        let settings = Settings {
            config_file,
            data_dir,
            model,
            base_url,
            api_key_env,
            replay: flag(global.replay.clone(), "--replay").or(from_env(
                "DSH_REPLAY",
                |v| Some(v.to_owned()),
                "a script",
            )?),
            reasoning,
            max_tokens,
            temperature,
            max_steps,
            connect_timeout_secs: pick
                .in_file(http.and_then(|h| h.connect_timeout_secs.as_ref()))
                .unwrap_or_else(|| default(10)),
            idle_timeout_secs: pick
                .in_file(http.and_then(|h| h.idle_timeout_secs.as_ref()))
                .unwrap_or_else(|| default(120)),
            max_retries: pick
                .in_file(http.and_then(|h| h.max_retries.as_ref()))
                .unwrap_or_else(|| default(4)),
            send_reasoning_content: pick
                .in_file(http.and_then(|h| h.send_reasoning_content.as_ref()))
                .unwrap_or_else(|| default(true)),
            max_tokens_field: pick
                .in_file(http.and_then(|h| h.max_tokens_field.as_ref()))
                .unwrap_or_else(|| default("max_tokens".to_owned())),
            headers: http
                .map(|h| {
                    h.headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
                        .collect()
                })
                .unwrap_or_default(),
            acp_permission: pick
                .in_file(acp.and_then(|a| a.permission.as_ref()))
                .unwrap_or_else(|| default("ask".to_owned())),
            acp_max_line_bytes: pick
                .in_file(acp.and_then(|a| a.max_line_bytes.as_ref()))
                .unwrap_or_else(|| default(32 * 1024 * 1024)),
            acp_cancel_grace_ms: pick
                .in_file(acp.and_then(|a| a.cancel_grace_ms.as_ref()))
                .unwrap_or_else(|| default(5000)),
            acp_teardown_deadline_ms: pick
                .in_file(acp.and_then(|a| a.teardown_deadline_ms.as_ref()))
                .unwrap_or_else(|| default(10_000)),
        };
        Ok(settings)
    }

    /// `<data_dir>/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.data_dir.value.join("sessions")
    }
}

fn default_data_dir() -> Result<PathBuf, Failure> {
    match env("XDG_DATA_HOME") {
        Some(xdg) if Path::new(&xdg).is_absolute() => Ok(PathBuf::from(xdg).join("dsh")),
        _ => match env("HOME") {
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
